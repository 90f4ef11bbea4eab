/// The trace `iapctl decode` reads when given no file: a short iAP2 session
/// between a head unit and a phone (detect, link synchronisation,
/// identification spanning two packets, now playing, artwork over the
/// file-transfer session, HID remote presses) with some stale bytes, a
/// corrupted packet, its retransmission and a duplicate, so that every kind of
/// output line appears. Tests check that it decodes as described.
public enum SampleTrace {
    public static let name = "built-in sample trace"
    public static let text = """
# iapctl's built-in sample trace: an iAP2 session between a head unit (accessory,
# USB host, lines marked '>') and a phone (device, lines marked '<').
# Every checksum is real: the only bytes a decoder should skip are the stale
# bytes and the deliberately corrupted packet, which are marked below.
# accessory (head unit) sends the detect sequence
> FF 55 02 00 EE 10
# device (phone) echoes it: both ends speak iAP2
< FF 55 02 00 EE 10
# SYN: accessory proposes link parameters and sessions 1 control, 2 file transfer, 3 external accessory
> FF 5A 00 1D 80 2B 00 00 DF 01 05 10 00 05 DC 00 46 03 03 01 00 01 02 01 01 03 02 01 B1
# SYN+ACK: device answers with its own limits
< FF 5A 00 1D C0 40 2B 00 5F 01 04 08 00 05 DC 00 46 03 02 01 00 01 02 01 01 03 02 01 BB
# ACK: accessory accepts; the link is up (a bare ACK uses no sequence number)
> FF 5A 00 09 40 2B 40 00 F3
# StartIdentification on the control session
< FF 5A 00 10 40 41 2B 01 EA 40 40 00 06 1D 00 5D
# IdentificationInformation, first part (the message spans two link packets)
> FF 5A 00 68 40 2C 41 01 91 40 40 00 BC 1D 01 00 16 00 00 44 65 76 20 4B 69 74 20 48 65 61 64 20 55 6E 69 74 00 00 09 00 01 44 4B 2D 31 00 00 0F 00 02 69 61 70 2D 64 65 76 6B 69 74 00 00 0C 00 03 53 4E 2D 30 30 30 31 00 00 0A 00 04 31 2E 30 2E 30 00 00 06 00 05 41 00 00 0E 00 06 50 00 50 02 68 00 68 02 68 03 09
# IdentificationInformation, second part
> FF 5A 00 68 40 2D 41 01 90 00 06 00 07 50 01 00 05 00 08 00 00 06 00 09 00 00 00 07 00 0C 65 6E 00 00 07 00 0D 65 6E 00 00 07 00 0D 64 65 00 00 16 00 0F 00 06 00 00 00 01 00 08 00 01 55 53 42 00 00 04 00 02 00 22 00 12 00 06 00 00 00 02 00 13 00 01 53 74 65 65 72 69 6E 67 20 77 68 65 65 6C 00 00 05 00 02 01 E9
# bare ACK of both
< FF 5A 00 09 40 41 2D 00 F0
# IdentificationAccepted
< FF 5A 00 10 40 42 2D 01 E7 40 40 00 06 1D 02 5B
# StartNowPlayingUpdates naming the wanted attributes as header-only parameters
> FF 5A 00 44 40 2E 42 01 B2 40 40 00 3A 50 00 00 1C 00 00 00 04 00 00 00 04 00 01 00 04 00 04 00 04 00 06 00 04 00 0C 00 04 00 1A 00 18 00 01 00 04 00 00 00 04 00 01 00 04 00 05 00 04 00 06 00 04 00 07 51
# NowPlayingUpdate: title, duration, album, artist, artwork transfer 7; playing, elapsed 42 s, repeat all
< FF 5A 00 85 40 43 2E 01 70 40 40 00 7B 50 01 00 50 00 00 00 0C 00 00 11 22 33 44 55 66 77 88 00 12 00 01 42 6C 75 65 20 69 6E 20 47 72 65 65 6E 00 00 08 00 04 00 05 24 68 00 11 00 06 4B 69 6E 64 20 6F 66 20 42 6C 75 65 00 00 10 00 0C 4D 69 6C 65 73 20 44 61 76 69 73 00 00 05 00 1A 07 00 25 00 01 00 05 00 00 01 00 08 00 01 00 00 A4 10 00 05 00 05 00 00 05 00 06 02 00 0A 00 07 4D 75 73 69 63 00 15
# artwork: file-transfer Setup for transfer 7 (12 bytes, type 2 = artwork)
< FF 5A 00 17 40 44 2E 02 DC 07 04 00 00 00 00 00 00 00 0C 00 00 02 E7
# file-transfer Start
> FF 5A 00 0C 40 2F 44 02 E6 07 01 F8
# FirstAndOnlyData: the whole file in one datagram
< FF 5A 00 18 40 45 2F 02 D9 07 C0 89 50 4E 47 0D 0A 1A 0A 00 00 00 00 90
# file-transfer Success
> FF 5A 00 0C 40 30 45 02 E4 07 05 F4
# steering-wheel play/pause: AccessoryHIDReport press (consumer page bit 3)
> FF 5A 00 1C 40 31 45 01 D4 40 40 00 12 68 02 00 06 00 00 00 02 00 06 00 01 01 08 EC
# stale bytes left in an endpoint after a crash: skipped and counted, the packet after them is still found
> 00 13 37 FF 5A 00
# and release
> FF 5A 00 1C 40 32 45 01 D3 40 40 00 12 68 02 00 06 00 00 00 02 00 06 00 01 01 00 F4
# NowPlayingUpdate (paused) with one bit flipped in transit: the payload checksum fails
< FF 5A 00 21 40 46 32 01 CD 40 40 00 17 50 01 00 11 00 01 00 05 00 00 02 00 08 00 01 00 00 A8 EC 61
# the device retransmits it intact
< FF 5A 00 21 40 46 32 01 CD 40 40 00 17 50 01 00 11 00 01 00 05 00 00 02 00 08 00 01 00 00 A9 EC 61
# the retransmission arrives twice: the duplicate is flagged and not delivered again
< FF 5A 00 21 40 46 32 01 CD 40 40 00 17 50 01 00 11 00 01 00 05 00 00 02 00 08 00 01 00 00 A9 EC 61
# cumulative ACK from the accessory
> FF 5A 00 09 40 32 46 00 E6
"""
}
