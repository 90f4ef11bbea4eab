/*
 * The throughput baseline of the USB lab: round trips of SIZE bytes through
 * a device that echoes its bulk OUT data on bulk IN (the kernel's Loopback
 * gadget function, usb_f_ss_lb), with plain synchronous libusb calls and no
 * protocol at all. scripts/usb-lab/throughput.sh compares it with iAP pings
 * of the same size through the whole stack over the same controller.
 *
 *   raw-echo VID:PID SIZE COUNT      (ids in hex)
 *
 * Prints one line of JSON: size, count, median_ms, p99_ms, total_s, mb_per_s
 * (payload bytes echoed per second, one direction).
 */
#include <libusb-1.0/libusb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    unsigned vid, pid;
    if (argc != 4 || sscanf(argv[1], "%x:%x", &vid, &pid) != 2) {
        fprintf(stderr, "usage: raw-echo VID:PID SIZE COUNT (ids in hex)\n");
        return 2;
    }
    int size = atoi(argv[2]), count = atoi(argv[3]);
    if (size < 1 || size > 1 << 20 || count < 1 || count > 1000000) {
        fprintf(stderr, "raw-echo: SIZE is 1...1048576 and COUNT 1...1000000\n");
        return 2;
    }
    libusb_context *context;
    int status = libusb_init(&context);
    if (status != 0) { fprintf(stderr, "raw-echo: libusb_init: %s\n", libusb_error_name(status)); return 1; }
    libusb_device_handle *handle = libusb_open_device_with_vid_pid(context, vid, pid);
    if (!handle) { fprintf(stderr, "raw-echo: no %04x:%04x (or no access)\n", vid, pid); return 1; }
    libusb_set_auto_detach_kernel_driver(handle, 1);
    status = libusb_claim_interface(handle, 0);
    if (status != 0) { fprintf(stderr, "raw-echo: claim interface 0: %s\n", libusb_error_name(status)); return 1; }

    /* The bulk endpoints of interface 0, from the active configuration. */
    struct libusb_config_descriptor *config;
    status = libusb_get_active_config_descriptor(libusb_get_device(handle), &config);
    if (status != 0) { fprintf(stderr, "raw-echo: configuration: %s\n", libusb_error_name(status)); return 1; }
    unsigned char in = 0, out = 0;
    int out_packet = 512;
    const struct libusb_interface_descriptor *interface = &config->interface[0].altsetting[0];
    for (int i = 0; i < interface->bNumEndpoints; i++) {
        const struct libusb_endpoint_descriptor *endpoint = &interface->endpoint[i];
        if ((endpoint->bmAttributes & 3) != LIBUSB_TRANSFER_TYPE_BULK) continue;
        if (endpoint->bEndpointAddress & 0x80) { if (!in) in = endpoint->bEndpointAddress; }
        else if (!out) { out = endpoint->bEndpointAddress; out_packet = endpoint->wMaxPacketSize & 0x7ff; }
    }
    libusb_free_config_descriptor(config);
    if (!in || !out) { fprintf(stderr, "raw-echo: interface 0 has no bulk IN and OUT endpoints\n"); return 1; }

    unsigned char *data = malloc(size), *back = malloc(size + 65536);
    double *times = malloc(sizeof(double) * count);
    for (int i = 0; i < size; i++) data[i] = (unsigned char)(i * 7 + 1);
    double start = now_ms();
    for (int round = 0; round < count; round++) {
        double begin = now_ms();
        int done = 0, moved = 0;
        status = libusb_bulk_transfer(handle, out, data, size, &moved, 5000);
        if (status != 0 || moved != size) {
            fprintf(stderr, "raw-echo: round %d: write: %s (%d of %d bytes)\n", round, libusb_error_name(status), moved, size);
            return 1;
        }
        /* A write of whole packets ends with a zero-length packet, or the
         * gadget's larger read would wait for more. */
        if (size % out_packet == 0 && (status = libusb_bulk_transfer(handle, out, data, 0, &moved, 5000)) != 0) {
            fprintf(stderr, "raw-echo: round %d: zero-length packet: %s\n", round, libusb_error_name(status));
            return 1;
        }
        while (done < size) {
            status = libusb_bulk_transfer(handle, in, back + done, 65536, &moved, 5000);
            if (status != 0) { fprintf(stderr, "raw-echo: round %d: read: %s\n", round, libusb_error_name(status)); return 1; }
            done += moved;
        }
        if (memcmp(data, back, size) != 0) { fprintf(stderr, "raw-echo: round %d: the echo differs\n", round); return 1; }
        times[round] = now_ms() - begin;
    }
    double total = now_ms() - start;
    qsort(times, count, sizeof(double), compare);
    printf("{\"size\":%d,\"count\":%d,\"median_ms\":%.3f,\"p99_ms\":%.3f,\"total_s\":%.3f,\"mb_per_s\":%.3f}\n",
           size, count, times[count / 2], times[(int)((count - 1) * 0.99 + 0.5)], total / 1e3,
           (double)size * count / (total / 1e3) / 1e6);
    libusb_release_interface(handle, 0);
    libusb_close(handle);
    libusb_exit(context);
    return 0;
}
