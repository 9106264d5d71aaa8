"""A real SMTP server for the delivery tests (aiosmtpd), never a stand-in for Roost's side.

  smtp_server.py serve DIR   makes a test CA and two certificates under DIR (one for
                             "localhost", one for "elsewhere.example"), listens with STARTTLS
                             required and AUTH PLAIN (roost / s3cret) on two ports (the second
                             shows the wrong name) and a third with TLS from the first byte,
                             prints {"port", "wrong_name_port", "implicit_tls_port", "ca"} as
                             one line, then one JSON line per accepted message (with its
                             "session": the client's address and port), until killed.
                             Recipients "tempfail…@" are refused with 451 the first time, and
                             "reject…@" always with 550.
  smtp_server.py read FILE   parses a stored message with Python's email package and prints
                             what the tests check as JSON.
"""
import asyncio
import datetime
import email
import email.policy
import json
import os
import socket
import ssl
import sys
import time
from pathlib import Path


def make_certificates(directory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    # A name of its own, so two test services' CAs can sit in one trust file.
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Roost test CA {os.urandom(4).hex()}")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    ca_path = os.path.join(directory, "ca.pem")
    with open(ca_path, "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    paths = {}
    for name in ("localhost", "elsewhere.example"):
        key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.DNSName(name)]
        cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        cert_path, key_path = os.path.join(directory, name + ".pem"), os.path.join(directory, name + ".key")
        with open(cert_path, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(key_path, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        paths[name] = (cert_path, key_path)
    return ca_path, paths


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sink:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0
        self.refused_once = set()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        local = address.split("@")[0]
        if local.startswith("reject"):
            return "550 5.1.1 No such mailbox here"
        if local.startswith("tempfail") and address not in self.refused_once:
            self.refused_once.add(address)
            return "451 4.3.0 Mailbox busy, try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.count += 1
        path = os.path.join(self.directory, f"message-{self.count}.eml")
        await asyncio.to_thread(Path(path).write_bytes, envelope.original_content)
        print(json.dumps({"from": envelope.mail_from, "to": envelope.rcpt_tos, "file": path,
                          "tls": session.ssl is not None, "authenticated": bool(session.authenticated),
                          "session": f"{session.peer[0]}:{session.peer[1]}", "t": time.time()}), flush=True)
        return "250 Message accepted"


def authenticator(server, session, envelope, mechanism, auth_data):
    from aiosmtpd.smtp import AuthResult
    return AuthResult(success=auth_data.login == b"roost" and auth_data.password == b"s3cret")


def serve(directory):
    from aiosmtpd.controller import Controller
    ca_path, certificates = make_certificates(directory)
    sink = Sink(directory)
    controllers = []
    ports = []
    for name in ("localhost", "elsewhere.example"):
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*certificates[name])
        port = free_port()
        controller = Controller(sink, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True,
                                authenticator=authenticator, auth_require_tls=True, server_hostname="localhost",
                                ready_timeout=20)
        controller.start()
        controllers.append(controller)
        ports.append(port)
    # And one speaking TLS from the first byte (smtps://, port 465's way).
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificates["localhost"])
    implicit_port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=implicit_port, ssl_context=context, authenticator=authenticator,
                            auth_require_tls=False, server_hostname="localhost", ready_timeout=20)
    controller.start()
    controllers.append(controller)
    print(json.dumps({"port": ports[0], "wrong_name_port": ports[1], "implicit_tls_port": implicit_port, "ca": ca_path}), flush=True)
    try:
        asyncio.run(asyncio.Event().wait())
    finally:
        for controller in controllers:
            controller.stop()


def read(path):
    with open(path, "rb") as f:
        message = email.message_from_binary_file(f, policy=email.policy.default)
    parts = {}
    for part in message.walk():
        if part.get_content_maintype() == "text":
            parts[part.get_content_type()] = part.get_content()
    print(json.dumps({
        "multipart": message.is_multipart(),
        "content_type": message.get_content_type(),
        "subject": str(message["Subject"]),
        "from": str(message["From"]),
        "to": str(message["To"]),
        "date": message["Date"] is not None and message["Date"].datetime is not None,
        "message_id": str(message["Message-ID"] or ""),
        "text": parts.get("text/plain", ""),
        "html": parts.get("text/html", ""),
        "defects": [str(d) for d in message.defects] + [str(d) for p in message.walk() for d in p.defects],
    }))


if __name__ == "__main__":
    {"serve": serve, "read": read}[sys.argv[1]](sys.argv[2])
