// Replays a recorded head unit's HID reports into an iAP-over-HID device
// and checks each answer, as a real head unit would meet it: the device's
// HID configuration selected (kernel drivers detached first), each "< "
// report sent by SET_REPORT exactly as recorded, the answer read from the
// interrupt IN endpoint, reassembled by its link control byte, and its iAP1
// frame compared with the expected one: the "= " line after it when there
// is one (where this project answers differently on purpose), else the
// recorded "> " answer's frame. Report ids of answers are not compared (the
// device picks its own).
//
//   hid-replay VID:PID TRACE
//
// Prints a PASS or FAIL line per request and exits 1 on any failure. USB
// lab tooling only (scripts/usb-lab/hid-replay.sh); synchronous libusb, no
// part of the product.
#include <libusb-1.0/libusb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { max_bytes = 1024 };

typedef struct { unsigned char bytes[max_bytes]; int count; } Bytes;

static int parse_hex(const char *text, Bytes *out) {
    out->count = 0;
    while (*text) {
        while (*text == ' ' || *text == '\t') text++;
        if (*text == '\0' || *text == '\n' || *text == '#') break;
        unsigned value;
        if (sscanf(text, "%2x", &value) != 1 || out->count >= max_bytes) return -1;
        out->bytes[out->count++] = (unsigned char)value;
        text += 2;
    }
    return out->count;
}

// The iAP1 frame (55, length, payload, checksum; short form) starting at `from`.
static int frame_of(const Bytes *data, int from, Bytes *frame) {
    if (from + 2 > data->count || data->bytes[from] != 0x55) return -1;
    int length = data->bytes[from + 1] + 3;
    if (from + length > data->count) return -1;
    memcpy(frame->bytes, data->bytes + from, length);
    frame->count = length;
    return length;
}

static void print_bytes(const char *label, const Bytes *data) {
    fprintf(stderr, "  %s:", label);
    for (int i = 0; i < data->count; i++) fprintf(stderr, " %02X", data->bytes[i]);
    fprintf(stderr, "\n");
}

int main(int argc, char **argv) {
    unsigned vid, pid;
    if (argc != 3 || sscanf(argv[1], "%x:%x", &vid, &pid) != 2) {
        fprintf(stderr, "usage: hid-replay VID:PID TRACE\n");
        return 2;
    }
    FILE *trace = fopen(argv[2], "r");
    if (!trace) { perror(argv[2]); return 2; }
    libusb_context *context;
    if (libusb_init(&context) != 0) { fprintf(stderr, "libusb_init failed\n"); return 2; }
    libusb_device_handle *handle = libusb_open_device_with_vid_pid(context, (uint16_t)vid, (uint16_t)pid);
    if (!handle) { fprintf(stderr, "no %04x:%04x\n", vid, pid); return 2; }
    libusb_set_auto_detach_kernel_driver(handle, 1);

    // The configuration holding the HID interface, and that interface's interrupt IN endpoint.
    libusb_device *device = libusb_get_device(handle);
    struct libusb_device_descriptor descriptor;
    libusb_get_device_descriptor(device, &descriptor);
    int configuration = -1, interface = -1, endpoint = -1;
    for (int c = 0; c < descriptor.bNumConfigurations && interface < 0; c++) {
        struct libusb_config_descriptor *config;
        if (libusb_get_config_descriptor(device, (uint8_t)c, &config) != 0) continue;
        for (int i = 0; i < config->bNumInterfaces && interface < 0; i++) {
            const struct libusb_interface_descriptor *setting = &config->interface[i].altsetting[0];
            if (setting->bInterfaceClass != 3) continue;
            for (int e = 0; e < setting->bNumEndpoints; e++) {
                const struct libusb_endpoint_descriptor *ep = &setting->endpoint[e];
                if ((ep->bEndpointAddress & 0x80) && (ep->bmAttributes & 3) == 3) {
                    configuration = config->bConfigurationValue;
                    interface = setting->bInterfaceNumber;
                    endpoint = ep->bEndpointAddress;
                }
            }
        }
        libusb_free_config_descriptor(config);
    }
    if (interface < 0) { fprintf(stderr, "no HID interface with an interrupt IN endpoint\n"); return 2; }
    int active = 0;
    libusb_get_configuration(handle, &active);
    if (active != configuration) {
        struct libusb_config_descriptor *config;
        if (libusb_get_active_config_descriptor(device, &config) == 0) {
            for (int i = 0; i < config->bNumInterfaces; i++) {
                int number = config->interface[i].altsetting[0].bInterfaceNumber;
                if (libusb_kernel_driver_active(handle, number) == 1) libusb_detach_kernel_driver(handle, number);
            }
            libusb_free_config_descriptor(config);
        }
        int result = libusb_set_configuration(handle, configuration);
        if (result != 0) { fprintf(stderr, "set configuration %d: %s\n", configuration, libusb_error_name(result)); return 2; }
    }
    int result = libusb_claim_interface(handle, interface);
    if (result != 0) { fprintf(stderr, "claim interface %d: %s\n", interface, libusb_error_name(result)); return 2; }

    char line[4096];
    Bytes request = {0}, recorded = {0}, expected = {0};
    int pending = 0, passed = 0, failed = 0, step = 0;
    // Checks the answer to the request sent last against `expected`.
    #define CHECK_PENDING() do { \
        if (pending) { \
            Bytes answer = {0}, frame = {0}; \
            unsigned char report[max_bytes]; \
            int done = 0; \
            for (int tries = 0; tries < 8 && !done; tries++) { \
                int got = 0; \
                if (libusb_interrupt_transfer(handle, (unsigned char)endpoint, report, sizeof report, &got, 3000) != 0) break; \
                if (got < 2) continue; \
                unsigned char control = report[1]; \
                if (control == 0x00 || control == 0x02) answer.count = 0; \
                if (answer.count + got - 2 <= max_bytes) { memcpy(answer.bytes + answer.count, report + 2, got - 2); answer.count += got - 2; } \
                done = control == 0x00 || control == 0x01; \
            } \
            int start = answer.count > 0 && answer.bytes[0] == 0xFF ? 1 : 0; \
            if (done && frame_of(&answer, start, &frame) > 0 && frame.count == expected.count \
                && memcmp(frame.bytes, expected.bytes, frame.count) == 0) { \
                passed++; printf("PASS: request %d answered as expected\n", step); \
            } else { \
                failed++; printf("FAIL: request %d\n", step); \
                print_bytes("sent", &request); print_bytes("expected frame", &expected); print_bytes("answer", &answer); \
            } \
            pending = 0; \
        } \
    } while (0)

    while (fgets(line, sizeof line, trace)) {
        if (line[0] == '<' && line[1] == ' ') {
            CHECK_PENDING();
            if (parse_hex(line + 2, &request) < 2) { fprintf(stderr, "bad request line: %s", line); return 2; }
            step++;
            result = libusb_control_transfer(handle, 0x21, 0x09, (uint16_t)(0x0200 | request.bytes[0]), (uint16_t)interface,
                                             request.bytes, (uint16_t)request.count, 1000);
            if (result != request.count) {
                failed++;
                printf("FAIL: request %d: SET_REPORT %s\n", step, result < 0 ? libusb_error_name(result) : "short");
                continue;
            }
            expected.count = 0;
            pending = 1;
        } else if (line[0] == '>' && line[1] == ' ' && pending) {
            if (parse_hex(line + 2, &recorded) < 2 || frame_of(&recorded, 2, &expected) < 0) { fprintf(stderr, "bad answer line: %s", line); return 2; }
        } else if (line[0] == '=' && line[1] == ' ' && pending) {
            if (parse_hex(line + 2, &recorded) < 1 || frame_of(&recorded, 0, &expected) < 0) { fprintf(stderr, "bad '=' line: %s", line); return 2; }
        }
    }
    CHECK_PENDING();
    libusb_release_interface(handle, interface);
    libusb_close(handle);
    libusb_exit(context);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
