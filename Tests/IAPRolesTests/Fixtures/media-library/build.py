#!/usr/bin/env python3
"""Writes the Media Library Access byte vectors in this folder (README.md)."""
import struct

def p(pid, data=b""):
    return struct.pack(">HH", 4 + len(data), pid) + data

def s(text):
    return text.encode() + b"\0"

def msg(mid, *params):
    body = b"".join(params)
    return b"\x40\x40" + struct.pack(">HH", 6 + len(body), mid) + body

def u8(v): return struct.pack(">B", v)
def u16(v): return struct.pack(">H", v)
def u32(v): return struct.pack(">I", v)
def u64(v): return struct.pack(">Q", v)
def group(pid, *members): return p(pid, b"".join(members))

vectors = {
    # Two libraries in one message, the group repeated (local and Apple Music Radio).
    "information-two-libraries": msg(0x4C01,
        group(0, p(0, s("iPhone")), p(1, s("LIB-0001")), p(2, u8(0))),
        group(0, p(0, s("Apple Music Radio")), p(1, s("RADIO-0002")), p(2, u8(2)))),
    # What a production head unit asks for: items 0-19, 25, 27; playlists 0-6;
    # progress, hiding remote items, play all songs; the playlist content
    # transfer info group with the seven ids TCC sends; a kept revision.
    "start-updates-production": msg(0x4C03,
        p(0, s("LIB-0001")), p(1, s("rev-41")),
        group(2, *[p(i) for i in list(range(20)) + [25, 27]]),
        group(3, *[p(i) for i in range(7)]),
        p(4), p(5), p(6),
        group(7, *[p(i) for i in (0, 1, 6, 12, 14, 16, 18)])),
    # An update as the facts describe one: reset, two items (the second with
    # its media type twice, as ADIT and LG keep arrays of), a playlist whose
    # contents come as transfer 7, a folder, deletions, progress, the flags
    # (play all songs with its data byte), an unknown member (20) skipped.
    "update-reset-items-playlists": msg(0x4C04,
        p(0, s("LIB-0001")), p(1, s("rev-42")), p(6),
        group(2, p(0, u64(0x1122334455667788)), p(1, s("So What")), p(2, u8(0)), p(4, u32(562000)),
                 p(5, u64(0xA1)), p(6, s("Kind of Blue")), p(7, u16(1)), p(8, u16(5)), p(9, u16(1)), p(10, u16(1)),
                 p(11, u64(0xB1)), p(12, s("Miles Davis")), p(13, u64(0xB1)), p(14, s("Miles Davis")),
                 p(15, u64(0xC1)), p(16, s("Jazz")), p(17, u64(0xD1)), p(18, s("Miles Davis")), p(19, u8(0)),
                 p(20, u8(1)), p(25, u8(1)), p(27, u16(0))),
        group(2, p(0, u64(0x99)), p(1, s("Episode 1")), p(2, u8(1)), p(2, u8(0))),
        group(3, p(0, u64(0xF00D)), p(1, s("Mixes")), p(4, u8(1))),
        group(3, p(0, u64(0xBEEF)), p(1, s("Blue")), p(2, u64(0xF00D)), p(3, u8(0)), p(4, u8(0)), p(5, u8(7)), p(6, u8(0))),
        p(4, u64(0x55)), p(5, u64(0x66)),
        p(7, u8(100)), p(8, u8(0)), p(9, u8(1))),
    # Two items by big-endian id, starting at the second.
    "play-items": msg(0x4C07, p(0, u64(0x1122334455667788) + u64(0x99)), p(1, u32(1)), p(2, s("LIB-0001"))),
    # An album from a starting item.
    "play-collection-album": msg(0x4C08, p(0, u64(0xA1)), p(1, u8(2)), p(2, u32(0)), p(3, s("LIB-0001")), p(4, u64(0x1122334455667788))),
    "play-all-songs": msg(0x4C09, p(0, s("LIB-0001")), p(1)),
    "play-current-selection": msg(0x4C06, p(0, s("LIB-0001"))),
}
for name, data in vectors.items():
    with open(name + ".hex", "w") as f:
        f.write(data.hex() + "\n")
