#!/usr/bin/env python3
"""A TCP proxy that loses iAP2 data packets, for interop runs.

    lossy-proxy.py LISTEN_PORT TARGET_PORT [--to-target N] [--to-client N]

Accepts one client on 127.0.0.1:LISTEN_PORT, connects it to
127.0.0.1:TARGET_PORT, and forwards bytes both ways whole link packet by
link packet, dropping every Nth data packet (a packet with a payload and
no SYN) in the direction given (0: none). Bytes that are not a packet pass
through. Prints each drop and, when the connection ends, the counts; exits
then.
"""
import argparse
import asyncio

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("listen_port", type=int)
parser.add_argument("target_port", type=int)
parser.add_argument("--to-target", type=int, default=0, help="drop every Nth data packet from client to target")
parser.add_argument("--to-client", type=int, default=0, help="drop every Nth data packet from target to client")
args = parser.parse_args()
dropped = {"to target": 0, "to client": 0}


async def pump(reader, writer, every, direction):
    buffer, data_packets = bytearray(), 0
    while data := await reader.read(65536):
        buffer += data
        out = bytearray()
        while buffer:
            start = buffer.find(b"\xff\x5a")
            if start < 0:
                # No packet start: all passes but a trailing FF, which may begin one.
                keep = len(buffer) - 1 if buffer[-1] == 0xFF else len(buffer)
                out += buffer[:keep]
                del buffer[:keep]
                break
            out += buffer[:start]
            del buffer[:start]
            if len(buffer) < 4:
                break
            length = buffer[2] << 8 | buffer[3]
            if length < 9:
                out += buffer[:2]
                del buffer[:2]
                continue
            if len(buffer) < length:
                break
            packet = bytes(buffer[:length])
            del buffer[:length]
            if every and length > 9 and not packet[4] & 0x80:
                data_packets += 1
                if data_packets % every == 0:
                    dropped[direction] += 1
                    print(f"proxy: dropped {direction}: {packet[:9].hex(' ')}", flush=True)
                    continue
            out += packet
        if out:
            writer.write(bytes(out))
            await writer.drain()
    writer.close()


async def main():
    done = asyncio.Event()

    async def handle(client_reader, client_writer):
        target_reader, target_writer = await asyncio.open_connection("127.0.0.1", args.target_port)
        await asyncio.gather(pump(client_reader, target_writer, args.to_target, "to target"),
                             pump(target_reader, client_writer, args.to_client, "to client"), return_exceptions=True)
        print(f"proxy: dropped {dropped['to target']} data packets to the target, {dropped['to client']} to the client",
              flush=True)
        done.set()

    server = await asyncio.start_server(handle, "127.0.0.1", args.listen_port)
    async with server:
        await done.wait()

asyncio.run(main())
