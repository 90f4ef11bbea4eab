/*
 * The HID throughput baseline of the USB lab: round trips of SIZE bytes
 * carried the way iAP over HID carries them, with no protocol above the
 * reports. Output reports go by SET_REPORT, input reports on a 64-byte
 * interrupt IN endpoint, each `[id][link control][bytes][padding]` in the
 * smallest report that fits (or the largest until what is left fits), with
 * the report sizes of a real iPhone's 208-byte descriptor. The device side
 * is a FunctionFS function with the same descriptors `iapctl gadget
 * --identity iphone` writes, so the two measure the same USB path.
 * scripts/usb-lab/throughput-hid.sh compares it with iAP pings.
 *
 *   raw-hid-echo device FFS_MOUNT
 *       writes the descriptors to FFS_MOUNT/ep0 and echoes every packet the
 *       host sends in output reports back in input reports (the packet
 *       starts with its length, 4 bytes big-endian, so padding can be cut)
 *   raw-hid-echo host VID:PID SIZE COUNT
 *       prints one line of JSON: size, count, median_ms, p99_ms, total_s,
 *       mb_per_s (payload bytes echoed per second, one way)
 */
#include <fcntl.h>
#include <libusb-1.0/libusb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const int input_ids[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C};
static const int input_counts[] = {5, 9, 13, 17, 25, 49, 95, 193, 257, 385, 513, 767};
static const int output_ids[] = {0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15};
static const int output_counts[] = {5, 9, 13, 17, 25, 49, 95, 193, 255};

static int count_of(int id, const int *ids, const int *counts, int kinds) {
    for (int k = 0; k < kinds; k++) if (ids[k] == id) return counts[k];
    return -1;
}

// Cuts `size` bytes into full-form reports; calls `emit` for each.
typedef int (*emit_fn)(void *context, unsigned char *report, int length);
static int send_packet(const unsigned char *data, int size, const int *ids, const int *counts, int kinds, emit_fn emit, void *context) {
    unsigned char report[1024];
    int start = 0;
    while (start < size) {
        int remaining = size - start, choice = kinds - 1;
        for (int k = 0; k < kinds; k++) if (counts[k] - 1 >= remaining) { choice = k; break; }
        int capacity = counts[choice] - 1, piece = remaining < capacity ? remaining : capacity;
        int first = start == 0, last = start + piece == size;
        report[0] = (unsigned char)ids[choice];
        report[1] = first ? (last ? 0x00 : 0x02) : (last ? 0x01 : 0x03);
        memcpy(report + 2, data + start, piece);
        memset(report + 2 + piece, 0, capacity - piece);
        if (emit(context, report, counts[choice] + 1) != 0) return -1;
        start += piece;
    }
    return 0;
}

// ---------------------------------------------------------------- device side

static void le32(unsigned char *at, uint32_t value) {
    at[0] = value & 0xFF; at[1] = value >> 8 & 0xFF; at[2] = value >> 16 & 0xFF; at[3] = value >> 24;
}

// The iPhone's report descriptor: input reports 01-0C, output reports 0D-15.
static unsigned char report_descriptor[208];
static void build_report_descriptor(void) {
    unsigned char *p = report_descriptor;
    const unsigned char head[] = {0x06, 0x00, 0xFF, 0x09, 0x01, 0xA1, 0x01, 0x75, 0x08, 0x26, 0x80, 0x00, 0x15, 0x00};
    memcpy(p, head, sizeof head); p += sizeof head;
    for (int k = 0; k < 21; k++) {
        int input = k < 12, count = input ? input_counts[k] : output_counts[k - 12];
        *p++ = 0x09; *p++ = 0x01; *p++ = 0x85; *p++ = (unsigned char)(k + 1);
        if (count < 256) { *p++ = 0x95; *p++ = (unsigned char)count; }
        else { *p++ = 0x96; *p++ = count & 0xFF; *p++ = count >> 8; }
        *p++ = input ? 0x82 : 0x92; *p++ = 0x02; *p++ = 0x01;
    }
    *p++ = 0xC0;
}

static int write_all(int fd, const unsigned char *bytes, int length) {
    return write(fd, bytes, length) == length ? 0 : -1;
}

static int write_report(void *context, unsigned char *report, int length) {
    return write_all(*(int *)context, report, length);
}

static int device_mode(const char *mount) {
    build_report_descriptor();
    char path[512];
    snprintf(path, sizeof path, "%s/ep0", mount);
    int ep0 = open(path, O_RDWR);
    if (ep0 < 0) { perror(path); return 2; }
    // FunctionFS v2 descriptors: full, high and super speed, and requests to the device.
    unsigned char speed[32], block[128];
    const unsigned char interface[] = {9, 4, 0, 0, 1, 0x03, 0, 0, 0, 9, 0x21, 0x11, 0x01, 0, 1, 0x22, 208, 0};
    const unsigned char endpoint[] = {7, 5, 0x81, 0x03, 64, 0, 1};
    const unsigned char companion[] = {6, 0x30, 0, 0, 64, 0};
    memcpy(speed, interface, sizeof interface);
    memcpy(speed + sizeof interface, endpoint, sizeof endpoint);
    int one = sizeof interface + sizeof endpoint, length = 24;
    for (int s = 0; s < 3; s++) { memcpy(block + length, speed, one); length += one; }
    memcpy(block + length, companion, sizeof companion); length += sizeof companion;
    le32(block, 3); le32(block + 4, length); le32(block + 8, 1 | 2 | 4 | 64);
    le32(block + 12, 3); le32(block + 16, 3); le32(block + 20, 4);
    unsigned char strings[16];
    le32(strings, 2); le32(strings + 4, 16); le32(strings + 8, 0); le32(strings + 12, 0);
    if (write_all(ep0, block, length) || write_all(ep0, strings, 16)) { perror("writing the descriptors"); return 2; }
    fprintf(stderr, "raw-hid-echo: descriptors written\n");

    int ep1 = -1, packet_length = 0;
    static unsigned char packet[1 << 17], events[12 * 4], report[1024];
    for (;;) {
        ssize_t got = read(ep0, events, sizeof events);
        if (got < 0) { perror("reading ep0"); return 1; }
        for (int at = 0; at + 12 <= got; at += 12) {
            unsigned char *setup = events + at, type = events[at + 8];
            if (type == 2 && ep1 < 0) {  // enable
                snprintf(path, sizeof path, "%s/ep1", mount);
                ep1 = open(path, O_WRONLY);
            } else if (type == 3 || type == 1) {  // disable, unbind
                if (ep1 >= 0) close(ep1);
                ep1 = -1;
            } else if (type == 4) {  // setup
                int request_type = setup[0], request = setup[1], value = setup[2] | setup[3] << 8, wlength = setup[6] | setup[7] << 8;
                if (request_type == 0x81 && request == 0x06 && value == 0x2200) {
                    write(ep0, report_descriptor, wlength < 208 ? wlength : 208);
                } else if (request_type == 0x21 && request == 0x09) {
                    int n = read(ep0, report, wlength < (int)sizeof report ? wlength : (int)sizeof report);
                    if (n < 2) continue;
                    int declared = count_of(report[0], output_ids, output_counts, 9);
                    int data = (declared > 0 && declared + 1 < n ? declared + 1 : n) - 2;
                    if (report[1] == 0x00 || report[1] == 0x02) packet_length = 0;
                    if (packet_length + data > (int)sizeof packet) { packet_length = 0; continue; }
                    memcpy(packet + packet_length, report + 2, data);
                    packet_length += data;
                    if ((report[1] == 0x00 || report[1] == 0x01) && ep1 >= 0) {
                        int size = packet_length >= 4 ? (packet[0] << 24 | packet[1] << 16 | packet[2] << 8 | packet[3]) + 4 : packet_length;
                        if (size > packet_length) size = packet_length;
                        if (send_packet(packet, size, input_ids, input_counts, 12, write_report, &ep1) != 0) perror("writing ep1");
                        packet_length = 0;
                    }
                } else if ((request_type & 0x80) == 0) {
                    read(ep0, NULL, 0);  // SET_IDLE, vendor requests: acknowledged
                } else {
                    read(ep0, NULL, 0);  // anything else asked of the device: stalled
                }
            }
        }
    }
}

// ---------------------------------------------------------------- host side

struct host { libusb_device_handle *handle; int interface; };

static int set_report(void *context, unsigned char *report, int length) {
    struct host *host = context;
    int result = libusb_control_transfer(host->handle, 0x21, 0x09, (uint16_t)(0x0200 | report[0]), (uint16_t)host->interface,
                                         report, (uint16_t)length, 1000);
    return result == length ? 0 : -1;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int host_mode(const char *ids, int size, int count) {
    unsigned vid, pid;
    if (sscanf(ids, "%x:%x", &vid, &pid) != 2 || size < 1 || size > 60000 || count < 1 || count > 100000) {
        fprintf(stderr, "raw-hid-echo host VID:PID SIZE COUNT (SIZE 1...60000)\n");
        return 2;
    }
    libusb_context *context;
    if (libusb_init(&context) != 0) return 2;
    libusb_device_handle *handle = libusb_open_device_with_vid_pid(context, (uint16_t)vid, (uint16_t)pid);
    if (!handle) { fprintf(stderr, "no %04x:%04x\n", vid, pid); return 2; }
    libusb_set_auto_detach_kernel_driver(handle, 1);
    struct libusb_config_descriptor *config;
    if (libusb_get_active_config_descriptor(libusb_get_device(handle), &config) != 0) return 2;
    int interface = -1, endpoint = -1;
    for (int i = 0; i < config->bNumInterfaces; i++) {
        const struct libusb_interface_descriptor *setting = &config->interface[i].altsetting[0];
        for (int e = 0; setting->bInterfaceClass == 3 && e < setting->bNumEndpoints; e++) {
            if ((setting->endpoint[e].bEndpointAddress & 0x80) && (setting->endpoint[e].bmAttributes & 3) == 3) {
                interface = setting->bInterfaceNumber;
                endpoint = setting->endpoint[e].bEndpointAddress;
            }
        }
    }
    libusb_free_config_descriptor(config);
    if (interface < 0 || libusb_claim_interface(handle, interface) != 0) { fprintf(stderr, "no HID interface to claim\n"); return 2; }
    struct host host = {handle, interface};
    unsigned char *payload = malloc(size + 4), *echoed = malloc(size + 4 + 1024), report[1024];
    double *times = malloc(sizeof(double) * count);
    payload[0] = (unsigned char)(size >> 24); payload[1] = (unsigned char)(size >> 16);
    payload[2] = (unsigned char)(size >> 8); payload[3] = (unsigned char)size;
    for (int i = 0; i < size; i++) payload[4 + i] = (unsigned char)(i * 7 + 3);
    double started = now_ms();
    for (int round = 0; round < count; round++) {
        double t0 = now_ms();
        if (send_packet(payload, size + 4, output_ids, output_counts, 9, set_report, &host) != 0) { fprintf(stderr, "SET_REPORT failed\n"); return 1; }
        int length = 0, done = 0;
        while (!done) {
            int got = 0;
            if (libusb_interrupt_transfer(handle, (unsigned char)endpoint, report, 768, &got, 2000) != 0 || got < 2) {
                fprintf(stderr, "no echo in round %d\n", round);
                return 1;
            }
            int declared = count_of(report[0], input_ids, input_counts, 12);
            int data = (declared > 0 && declared + 1 < got ? declared + 1 : got) - 2;
            if (length + data <= size + 4 + 1024) { memcpy(echoed + length, report + 2, data); length += data; }
            done = report[1] == 0x00 || report[1] == 0x01;
        }
        times[round] = now_ms() - t0;
        if (length < size + 4 || memcmp(echoed, payload, size + 4) != 0) { fprintf(stderr, "round %d: echo differs\n", round); return 1; }
    }
    double total = now_ms() - started;
    qsort(times, count, sizeof(double), compare);
    int p99 = (count * 99) / 100;
    printf("{\"size\":%d,\"count\":%d,\"median_ms\":%.3f,\"p99_ms\":%.3f,\"total_s\":%.3f,\"mb_per_s\":%.3f}\n", size, count,
           times[count / 2], times[p99 < count ? p99 : count - 1], total / 1e3, size * count / (total / 1e3) / 1e6);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "device") == 0) return device_mode(argv[2]);
    if (argc == 5 && strcmp(argv[1], "host") == 0) return host_mode(argv[2], atoi(argv[3]), atoi(argv[4]));
    fprintf(stderr, "usage: raw-hid-echo device FFS_MOUNT | raw-hid-echo host VID:PID SIZE COUNT\n");
    return 2;
}
