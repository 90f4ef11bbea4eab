#!/usr/bin/env python3
"""Drive wiomoc/iap2's accessory stack against our phone over TCP.

wiomoc/iap2 (https://github.com/wiomoc/iap2) is a Python iAP2 accessory: its
link layer (`IAP2Connection`) and control-message codec are used here
unchanged, imported from a checkout given on the command line. This file
only supplies what it leaves to its application: the authentication
answers (the dev kit's software authenticator key stands in for wiomoc's
I2C coprocessor) and an IdentificationInformation like the one its
`__main__` sends.

    wiomoc-accessory.py --make-identity DIR
    wiomoc-accessory.py CHECKOUT HOST PORT --identity DIR [--languages de,en]
                        [--components] [--rounds N] [--linger SECONDS]
    wiomoc-accessory.py CHECKOUT HOST PORT --no-auth ...

--make-identity writes a test CA and an accessory certificate and key made
with Python's `cryptography` (P-256, not the dev kit's own authenticator):
give DIR/authority-certificate.pem to the phone as --trust-anchors.

Prints `INTEROP OK: <step>` for each step passed and exits 0, or prints
`INTEROP FAIL: <step>: <what happened>` and exits 1.
"""
import argparse
import asyncio
import os
import struct
import sys

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--make-identity", metavar="DIR", help="write a test CA and accessory identity to DIR and exit")
parser.add_argument("checkout", nargs="?", help="a checkout of wiomoc/iap2 (the directory holding iap2/)")
parser.add_argument("host", nargs="?")
parser.add_argument("port", nargs="?", type=int)
parser.add_argument("--languages", default="de", help="SupportedLanguage values, comma-separated (wiomoc packs a list into one parameter)")
parser.add_argument("--components", action="store_true",
                    help="also declare wiomoc's Bluetooth, vehicle information, vehicle status and wireless CarPlay components")
parser.add_argument("--rounds", type=int, default=0, help="Stop/StartNowPlayingUpdates rounds after the first update")
parser.add_argument("--linger", type=float, default=1.0, help="seconds to keep the link up at the end")
parser.add_argument("--no-auth", action="store_true", help="for a phone run with --auth off")
parser.add_argument("--identity", metavar="DIR", help="the accessory identity --make-identity wrote")
parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each expected message")
args = parser.parse_args()

import datetime  # noqa: E402
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, utils  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


def make_identity(directory):
    os.makedirs(directory, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    def name(common):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common),
                          x509.NameAttribute(NameOID.ORGANIZATION_NAME, "interop test")])
    def certificate(subject, key, issuer, issuer_key, ca):
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        return builder.sign(issuer_key, hashes.SHA256())
    authority_key, accessory_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    authority = certificate(name("interop test authority"), authority_key, name("interop test authority"), authority_key, True)
    accessory = certificate(name("wiomoc accessory"), accessory_key, authority.subject, authority_key, False)
    for file, data in (("authority-certificate.pem", authority.public_bytes(serialization.Encoding.PEM)),
                       ("accessory-certificate.pem", accessory.public_bytes(serialization.Encoding.PEM)),
                       ("accessory-key.pem", accessory_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                                          serialization.NoEncryption()))):
        with open(os.path.join(directory, file), "wb") as f:
            f.write(data)


if args.make_identity:
    make_identity(args.make_identity)
    sys.exit(0)
if not (args.checkout and args.host and args.port):
    parser.error("CHECKOUT, HOST and PORT are required")
if not args.no_auth and not args.identity:
    parser.error("--identity DIR is required unless --no-auth")
sys.path.insert(0, args.checkout)
from iap2.control_session_message import Uint8, Uint16, read_csm, register_csm, write_csm  # noqa: E402
from iap2.control_session_message.authentication import (  # noqa: E402
    AuthenticationCertificate, AuthenticationFailed, AuthenticationResponse, AuthenticationSucceeded,
    RequestAuthenticationCertificate, RequestAuthenticationChallengeResponse)
from iap2.control_session_message.identification import (  # noqa: E402
    ExternalAccessoryProtocol, IdentificationAccepted, IdentificationInformation, IdentificationRejected, MatchAction,
    PowerProvidingCapability, SerialTransportComponent, StartIdentification)
from iap2.link_layer import IAP2Connection  # noqa: E402

for message in (RequestAuthenticationCertificate, RequestAuthenticationChallengeResponse, AuthenticationSucceeded,
                AuthenticationFailed, StartIdentification, IdentificationAccepted, IdentificationRejected):
    register_csm(message)

START_NOW_PLAYING, NOW_PLAYING_UPDATE, STOP_NOW_PLAYING = 0x5000, 0x5001, 0x5002


def fail(step, what):
    print(f"INTEROP FAIL: {step}: {what}", flush=True)
    sys.exit(1)


def load_identity():
    directory = args.identity
    with open(os.path.join(directory, "accessory-certificate.pem"), "rb") as f:
        certificate = x509.load_pem_x509_certificate(f.read())
    with open(os.path.join(directory, "accessory-key.pem"), "rb") as f:
        key = serialization.load_pem_private_key(f.read(), None)
    return certificate.public_bytes(serialization.Encoding.DER), key


def sign(key, challenge):
    # The dev kit's phone takes the 32-byte challenge as the digest
    # (Docs/Authentication.md) and wants a raw r‖s signature.
    r, s = utils.decode_dss_signature(key.sign(challenge, ec.ECDSA(utils.Prehashed(hashes.SHA256()))))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def message_ids(*ids):
    return b"".join(struct.pack(">H", i) for i in ids)


def components():
    if not args.components:
        return {}
    from iap2.control_session_message.identification import (
        BluetoothTransportComponent, EngineType, VehicleInformationComponent, VehicleStatusComponent,
        WirelessCarPlayTransportComponent)
    return dict(
        bluetooth_transport_component=[BluetoothTransportComponent(
            id=Uint16(1), name="blue", supports_iap2_connection=True, bluetooth_transport_mac=bytes.fromhex("B827EB236AF4"))],
        vehicle_information_component=VehicleInformationComponent(id=Uint16(0), name="Model X", engine_type=EngineType.ELECTRIC),
        vehicle_status_component=VehicleStatusComponent(id=Uint16(0), name="Model X", range_warning=True),
        wireless_car_play_transport_component=WirelessCarPlayTransportComponent(
            id=Uint16(2), name="raspberrypi", supports_iap2_connection=True, supports_car_play=True))


def identification():
    return IdentificationInformation(
        name="raspberrypi", model_identifier="raspberrypi", manufacturer="wiomoc", serial_number="0122349",
        fireware_version="1.0.1", hardware_version="2.0",
        messages_sent_by_accessory=message_ids(START_NOW_PLAYING, STOP_NOW_PLAYING),
        messages_received_from_accessory=message_ids(NOW_PLAYING_UPDATE),
        power_providing_capability=PowerProvidingCapability.NONE,
        maximum_current_drawn_from_device=Uint16(20),
        supported_external_accessory_protocol=[ExternalAccessoryProtocol(
            id=Uint8(1), name="de.wiomoc.test", match_action=MatchAction.NONE)],
        current_language=args.languages.split(",")[0],
        supported_language=args.languages.split(","),
        app_match_team_id=None,
        serial_transport_component=[SerialTransportComponent(id=Uint16(0), name="tcp", supports_iap2_connection=True)],
        **components())


async def expect(stream, step):
    try:
        return await asyncio.wait_for(read_csm(stream), args.timeout)
    except asyncio.TimeoutError:
        fail(step, f"nothing within {args.timeout:g} s")


async def raw_message(stream, message_id):
    stream.write(struct.pack(">HHH", 0x4040, 6, message_id))
    await stream.drain()


async def next_raw_message(stream, step):
    try:
        head = await asyncio.wait_for(stream.readexactly(6), args.timeout)
        length, message_id = struct.unpack(">HH", head[2:6])
        await asyncio.wait_for(stream.readexactly(length - 6), args.timeout)
        return message_id
    except asyncio.TimeoutError:
        fail(step, f"no message within {args.timeout:g} s")


async def main():
    reader, writer = await asyncio.open_connection(args.host, args.port)
    connection = IAP2Connection(writer, reader, asyncio.get_running_loop(), max_outgoing=4)
    connection.start()
    stream = connection.control_session

    if not args.no_auth:
        certificate, key = load_identity()
        while True:
            message = await expect(stream, "authentication")
            if isinstance(message, RequestAuthenticationCertificate):
                await write_csm(stream, AuthenticationCertificate(certificate=certificate))
            elif isinstance(message, RequestAuthenticationChallengeResponse):
                await write_csm(stream, AuthenticationResponse(response=sign(key, message.challenge)))
            elif isinstance(message, AuthenticationSucceeded):
                print("INTEROP OK: authenticated", flush=True)
                break
            else:
                fail("authentication", message)

    while True:
        message = await expect(stream, "identification")
        if isinstance(message, StartIdentification):
            await write_csm(stream, identification())
        elif isinstance(message, IdentificationAccepted):
            print("INTEROP OK: identified", flush=True)
            break
        else:
            fail("identification", message)

    for round in range(1 + args.rounds):
        if round:
            await raw_message(stream, STOP_NOW_PLAYING)
        await raw_message(stream, START_NOW_PLAYING)
        received = await next_raw_message(stream, f"now playing, round {round + 1}")
        if received != NOW_PLAYING_UPDATE:
            fail(f"now playing, round {round + 1}", f"message {received:04X} instead of NowPlayingUpdate")
    print(f"INTEROP OK: now playing ({1 + args.rounds} subscriptions answered)", flush=True)
    await asyncio.sleep(args.linger)
    writer.close()


asyncio.run(main())
