"""The lab's server (lab.py): its page and JSON API on this machine, the rules that keep a server on a person's
machine from becoming a door into it (the models it answers with are engineering/lab_models.py's).

    server = lab_server.start(api, "127.0.0.1", 8765)  # api: {("POST", "/api/look"): function of the body, ...}
    server.serve_forever()

- It listens on 127.0.0.1 unless the person asks for another address (resolved first: every address, in any
  spelling, is refused), and answers only requests whose Host header names the address it listens on, or localhost,
  with its port: a site whose name is made to point at 127.0.0.1 (DNS rebinding) sends its own name, and is refused.
- A POST carries one JSON object of at most MAX_BODY bytes, as Content-Type application/json: a page of another
  site cannot send that without asking first, and is never told yes; one that says it comes from another origin is
  refused. A header these rules read, sent twice, is refused: which of the two a proxy acted on is unknown.
- GET serves the page's own files, read once from engineering/lab/ under fixed names: no path a request names is
  ever opened, and any other path is 404.
- Every request is answered, and every refusal is a 4xx and {"error": "one line"}: a malformed request saying what to
  send (408 where it has not come whole within TIMEOUT), a person's bad input (InputError) with its message. What a
  request sends is read defensively, in time that grows with its length alone: a length of at most LENGTH_DIGITS
  digits, JSON at most MAX_DEPTH deep (files.json_nesting), numbers compared before any float is made of them. Only a
  bug in the code (a learner's broken backward) is a 500: its traceback printed here, one line answered, and the
  server goes on.
- HTTP/1.1: requests sent one after another on a connection (pipelined) are each answered, in order; a refusal
  closes the connection after it, saying so (Connection: close), since what follows a refused request cannot be
  trusted to start the next. HTTP/0.9, which has no status line and no headers to answer with, is refused.
- Each connection has a thread of its own, at most MAX_THREADS at once: the next waits in the kernel's backlog.
- One API call at a time (LabServer.computing): a look or a learn keeps every core busy already, and a GPT-2
  backward holds gigabytes, so two at once would only share the cores and double the memory.
"""

import errno
import http.server
import io
import ipaddress
import json
import socket
import sys
import threading
import time
import traceback
from http import HTTPStatus
from pathlib import Path

from engineering.errors import InputError
from engineering.files import json_nesting

MAX_BODY = 64 * 1024  # bytes of a request's body: a text of thousands of tokens fits many times over
DRAIN = 1024 * 1024  # bytes still read after an answer, so that it reaches a client still sending what was refused
LINGER = 2  # seconds a connection is read from after its answer, at most
TIMEOUT = 30  # seconds a request may take to come whole, from when the lab waits for it; then it is told 408
MAX_THREADS = 32  # connections answered at once, a thread each; a browser opens 6 to a site
LENGTH_DIGITS = 9  # digits of a Content-Length read: 999,999,999 bytes, far past MAX_BODY, and int() stays quick
MAX_DEPTH = 4  # arrays and objects nested in a body: the API's are one object of texts and numbers
BACKLOG = 64  # connections the kernel holds while the lab answers others: socketserver's 5 reset a burst of 20
ONCE = ("Host", "Origin", "Content-Type", "Content-Length")  # the headers the rules read, refused when sent twice
PAGE = Path(__file__).resolve().parent / "lab"
STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/index.html": ("index.html", "text/html; charset=utf-8"),
          "/lab.js": ("lab.js", "text/javascript; charset=utf-8"), "/lab.css": ("lab.css", "text/css; charset=utf-8")}
LOCAL = ("127.0.0.1", "localhost")
HEADERS = {  # on every answer: nothing cached, nothing sniffed, no page of another site framing this one
    "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; "
                               "form-action 'none'",
}


class RequestError(Exception):
    """A request the lab does not answer: its HTTP status, and a message saying what to send instead."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


# --- the fields of a request's JSON body ----------------------------------------------------------------------

def json_excerpt(value):
    """A value a request sent, as JSON cut to 40 characters, for a message (its nesting is bounded by MAX_DEPTH).

    Example: json_excerpt("x" * 100) -> '"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (40 long)
    """
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def text_field(body, name):
    """body[name]: a text that is not empty and is valid Unicode; RequestError 400 saying what to send."""
    value = body.get(name)
    if not isinstance(value, str) or not value:
        got = "nothing" if name not in body else json_excerpt(value)
        raise RequestError(400, f'"{name}" must be a text that is not empty, such as {{"{name}": "The cat sat"}}; '
                                f"got {got}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which JSON's \\ud800 can spell
        raise RequestError(400, f'"{name}" is not valid Unicode (it holds half of a surrogate pair)') from None
    return value


def number_field(body, name, default=None):
    """body[name], or default where it is left out (None: it must be there): a number, as a float. The range each
    field takes is checked where it is used (transformer.Sampling's, lab.py's lr_field); here only that it is a
    number a float holds: an integer is compared before it is converted (10**400 > the largest float, exactly,
    where float(10**400) would raise), and a comparison is False for NaN."""
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -sys.float_info.max <= value <= \
            sys.float_info.max:
        got = "nothing" if name not in body else f"the text {json_excerpt(value)}" if isinstance(value, str) else \
            json_excerpt(value)
        raise RequestError(400, f'"{name}" must be a number within a float\'s range (±1.8e308), such as '
                                f'{{"{name}": 0.5}}; got {got}')
    return float(value)


def whole_field(body, name, default, least=0, most=2 ** 63 - 1):
    """body[name], or default where it is left out: a whole number from least to most."""
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise RequestError(400, f'"{name}" must be a whole number from {least} to {most}; got {json_excerpt(value)}')
    return value


def name_field(body, name):
    """body[name]: a name (a text that is not empty), or None where it is left out or null."""
    value = body.get(name)
    if value is not None and (not isinstance(value, str) or not value or len(value) > 255):
        raise RequestError(400, f'"{name}" must be a name from the list, or null; got {json_excerpt(value)}')
    return value


# --- the server -----------------------------------------------------------------------------------------------

def one_line(text, most=300):
    """text on one line, at most `most` characters. Example: one_line("a\\n  b") -> "a b" """
    text = " ".join(str(text).split())
    return text if len(text) <= most else text[:most - 3] + "..."


class RequestClock(io.RawIOBase):
    """A connection's bytes, read against one deadline for the whole of each request rather than a timeout for each
    read: a request that trickles in a byte at a time is as late as one that stopped coming, and is told 408."""

    def __init__(self, connection):
        super().__init__()
        self.connection, self.deadline, self.received = connection, time.monotonic(), 0

    def start(self, seconds):
        """The next request must come whole within seconds from now; received counts its bytes read since."""
        self.deadline, self.received = time.monotonic() + seconds, 0

    def readable(self):
        return True

    def readinto(self, buffer):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's time is up")
        self.connection.settimeout(left)
        try:
            count = self.connection.recv_into(buffer)
        except ConnectionResetError:  # the client is gone: its connection ends, as where it closed it
            return 0
        self.received += count
        return count


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "numpy-gpt-lab"
    sys_version = ""
    protocol_version = "HTTP/1.1"  # a connection answers each request sent on it, pipelined ones in order
    default_request_version = "HTTP/1.0"  # a request without a version still gets a status line, not a bare body

    def setup(self):
        super().setup()
        self.rfile.close()  # http.server's reader, whose timeout is for each read: the request's clock reads instead
        self.clock = RequestClock(self.connection)
        self.rfile = io.BufferedReader(self.clock)

    def handle_one_request(self):
        """http.server's reading and answering of one request, with a request line that began to come but was not
        whole within TIMEOUT answered 408 (http.server closes the connection without a word)."""
        self.clock.start(TIMEOUT)  # TIMEOUT read here, so that a test can shorten it
        self.answered = False
        super().handle_one_request()
        if self.clock.received and not self.answered and time.monotonic() >= self.clock.deadline:
            self.command, self.requestline, self.request_version = None, "", self.default_request_version
            self.send_error(408, f"the request line was not whole within {TIMEOUT} s: send the request whole")

    def do_GET(self):
        self.answer("GET")

    def do_POST(self):
        self.answer("POST")

    def refuse_method(self):
        self.send_json(405, {"error": f"the lab answers GET and POST only, not {one_line(self.command, 20)}"})

    do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = refuse_method

    def answer(self, method):
        try:
            self.check_headers(method)
            path = self.path.split("?", 1)[0]
            if method == "GET" and path in self.server.static:
                self.send(200, *self.server.static[path])
                return
            function = self.server.api.get((method, path))
            if function is None:
                elsewhere = any(known == path for _, known in self.server.api)
                raise RequestError(405 if elsewhere else 404, f"{method} {one_line(path, 60)} is not one of this lab's "
                                   f"addresses: {', '.join(f'{m} {p}' for m, p in self.server.api)}")
            arguments = (self.json_body(),) if method == "POST" else ()
            with self.server.computing:
                answer = function(*arguments)
            self.send_json(200, answer)
        except RequestError as err:
            self.send_json(err.status, {"error": one_line(err)})
        except InputError as err:  # a person's bad input, found by the project's code: a damaged run, say
            self.send_json(400, {"error": one_line(err)})
        except Exception as err:  # a bug: its traceback where the lab runs, one line on the page
            traceback.print_exc()
            sys.stderr.flush()
            self.send_json(500, {"error": one_line(f"a bug in the code: {type(err).__name__}: {err} (its traceback "
                                                   f"is in the terminal where the lab runs)")})

    def check_headers(self, method):
        """The headers the lab's rules read, each sent once: where one is sent twice, which of the two a proxy or a
        browser acted on is unknown, so neither is believed. Then the Host, and a POST's Origin."""
        for name in ONCE:
            if len(self.headers.get_all(name) or []) > 1:
                raise RequestError(400, f"the header {name} is sent twice: send it once")
        host = (self.headers.get("Host") or "").strip().lower()
        if host not in self.server.hosts:
            raise RequestError(403, f"this lab answers only requests to {self.server.url}")
        origin = self.headers.get("Origin")
        if method == "POST" and origin is not None and origin.lower() not in {f"http://{h}" for h in self.server.hosts}:
            raise RequestError(403, f"this lab answers only its own page, {self.server.url}")

    def content_length(self):
        """The body's length in bytes, as its Content-Length says: None where it says none (no header, or not
        digits); a length of more than LENGTH_DIGITS digits is read as 10**LENGTH_DIGITS, more than any body the lab
        takes, without converting thousands of digits (int() refuses 4,300 or more)."""
        length = (self.headers.get("Content-Length") or "").strip()
        if not (length.isascii() and length.isdigit()):
            return None
        return int(length) if len(length) <= LENGTH_DIGITS else 10 ** LENGTH_DIGITS

    def json_body(self):
        """The request's body: one JSON object, at most MAX_BODY bytes and MAX_DEPTH deep; RequestError saying what
        to send."""
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise RequestError(415, "send the body as JSON, with Content-Type: application/json")
        if self.headers.get("Transfer-Encoding") is not None:
            raise RequestError(411, "send the body with a Content-Length, not in chunks")
        length = self.content_length()
        if length is None:
            raise RequestError(411, "send the body with its Content-Length, in bytes")
        if length > MAX_BODY:
            said = f"{length:,}" if length < 10 ** LENGTH_DIGITS else f"more than {10 ** LENGTH_DIGITS - 1:,}"
            raise RequestError(413, f"the body is {said} bytes; the lab takes at most {MAX_BODY // 1024} KiB: send a "
                                    f"shorter text")
        try:
            data = self.rfile.read(length)
        except TimeoutError:
            raise RequestError(408, f"the body was not whole within {TIMEOUT} s: send it whole, as long as its "
                                    f"Content-Length says") from None
        except OSError:  # the client reset the connection: the answer goes as far as it can
            data = b""
        if len(data) < length:
            raise RequestError(400, "the body ended before its Content-Length")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or json_nesting(text) > MAX_DEPTH:
            raise RequestError(400, f'send one JSON object of UTF-8 text, nested at most {MAX_DEPTH} deep, such as '
                                    f'{{"text": "The cat sat"}}')
        try:
            body = json.loads(text, parse_constant=refuse_constant)
        except ValueError:  # a number of more than 4,300 digits is one too
            body = None
        if not isinstance(body, dict):
            raise RequestError(400, 'send one JSON object, such as {"text": "The cat sat"}')
        return body

    def send_json(self, status, value):
        self.send(status, json.dumps(value, allow_nan=False, separators=(",", ":")).encode("utf-8"),
                  "application/json")

    def send(self, status, body, content_type):
        """Answer with status, body and the HEADERS; the connection is closed after a refusal, and after a request
        whose body is left unread (what follows it is no request of its own), and says so (Connection: close)."""
        self.close_connection = self.close_connection or status >= 400 or self.body_left_unread()
        closing = {"Connection": "close"} if self.close_connection else {}
        self.answered = True
        try:
            self.connection.settimeout(TIMEOUT)  # an answer has TIMEOUT of its own to be taken
            self.send_response(status)
            for name, value in {"Content-Type": content_type, "Content-Length": str(len(body)), **HEADERS,
                                **closing}.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":  # an answer to HEAD has headers only
                self.wfile.write(body)
        except OSError:  # the page left before its answer came, or stopped reading it: nothing to tell it
            self.close_connection = True

    def body_left_unread(self):
        """Whether the request sent a body that was not read: only a POST's is (json_body), and only whole."""
        headers = getattr(self, "headers", None) or {}  # none where the request line itself was refused
        length = (headers.get("Content-Length") or "0").strip()
        return self.command != "POST" and (length != "0" or headers.get("Transfer-Encoding") is not None)

    def parse_request(self):
        """http.server's reading of the request line and headers, with the requests it leaves unanswered answered: a
        request line of spaces only, headers that are not whole within TIMEOUT, and HTTP/0.9, which it answers
        with a bare body (no status line, no headers)."""
        try:
            parsed = super().parse_request()
        except TimeoutError:
            self.send_error(408, f"the headers were not whole within {TIMEOUT} s: send the request whole")
            return False
        if not parsed and not self.requestline.split():
            self.send_error(400, "send a request line, such as GET / HTTP/1.1")
        if parsed and version_number(self.request_version) < (1, 0):
            sent, self.request_version = self.request_version, self.default_request_version  # a refusal with a status
            self.send_error(400, f"the lab answers HTTP/1.0 and HTTP/1.1, not {sent}: send the request line as "
                                 f"GET / HTTP/1.1")
            return False
        return parsed

    def send_error(self, code, message=None, explain=None):
        """A request the HTTP parser refused (a broken request line, too many headers, an unknown method), in JSON
        too. Its 501 (a method it does not know) and 505 (HTTP/2 or later) become the lab's 405 and 400: a 5xx
        says the lab failed, and here the request is what is wrong."""
        self.close_connection = True
        status = {501: 405, 505: 400}.get(code, code)
        said = f"the lab answers GET and POST only, not {self.command}" if code == 501 else \
            message or HTTPStatus(code).phrase
        self.send_json(status, {"error": one_line(said)})

    def log_message(self, *args):
        pass  # one line per request would bury what matters in the terminal: a bug's traceback


def version_number(version):
    """(major, minor) of an HTTP version that http.server's parser took.

    Example: version_number("HTTP/0.9") -> (0, 9)
    """
    major, minor = version.split("/", 1)[1].split(".")
    return int(major), int(minor)


def refuse_constant(name):
    raise ValueError(f"{name} is not a number JSON has")


class LabServer(http.server.ThreadingHTTPServer):
    daemon_threads = True  # a connection left open never keeps the lab from stopping
    request_queue_size = BACKLOG

    def __init__(self, address, api, named):
        """address: (an ipaddress address, a port); named: the --host it was resolved from, a Host it may be sent."""
        self.address_family = socket.AF_INET6 if address[0].version == 6 else socket.AF_INET
        super().__init__((str(address[0]), address[1]), Handler)
        self.api, self.computing, self.threads = api, threading.Lock(), threading.BoundedSemaphore(MAX_THREADS)
        self.static = {path: ((PAGE / name).read_bytes(), kind) for path, (name, kind) in STATIC.items()}
        host = f"[{address[0]}]" if address[0].version == 6 else str(address[0])
        self.url = f"http://{host}:{self.server_port}/"
        self.hosts = {f"{name}:{self.server_port}" for name in (*LOCAL, host, named.lower())}

    def process_request(self, request, client_address):
        """A thread for the connection, once fewer than MAX_THREADS answer others: until then the lab accepts no other
        connection, and the kernel holds them (BACKLOG)."""
        self.threads.acquire()
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: none will give its place back
            self.threads.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.threads.release()

    def shutdown_request(self, request):
        """Close a connection after its answer without losing the answer: say that it is whole (SHUT_WR), then read
        and drop what the client still sends (a body refused unread), up to DRAIN bytes for LINGER seconds. Closing
        with bytes unread would reset the connection, and a reset can drop an answer the client has not read yet."""
        try:
            request.shutdown(socket.SHUT_WR)
            deadline, left = time.monotonic() + LINGER, DRAIN
            while left > 0 and time.monotonic() < deadline:
                request.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = request.recv(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:  # the timeout, or the client gone
            pass
        self.close_request(request)


def listening_address(host):
    """(the address host names, resolved as listening resolves it, whether that is this machine's alone: a loopback
    address such as 127.0.0.1, 127.0.0.2 or ::1). InputError where it names no address, or every address of the
    machine, in any spelling (0, 0x0, 000.000.000.000, ::0, ::ffff:0.0.0.0, ""): the page's address must be one, and
    a lab open to every network must not come of a spelling.

    Example: listening_address("0x7f.1") -> (IPv4Address('127.0.0.1'), True)
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as LabServer listens
    try:  # "" is every address to bind, None to getaddrinfo
        found = socket.getaddrinfo(host or None, 0, family, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as err:
        raise InputError(f"--host {host!r} names no address ({err}): give an address of this machine, or leave "
                         f"--host out for 127.0.0.1") from None
    address = ipaddress.ip_address(found[0][4][0])
    plain = address.ipv4_mapped or address if address.version == 6 else address  # ::ffff:a.b.c.d is a.b.c.d
    if plain.is_unspecified:
        raise InputError(f"--host {host!r} is {address}, every address of this machine, and the page's address must "
                         f"name one: give one address of this machine, or leave --host out for 127.0.0.1")
    return address, plain.is_loopback


def start(api, host, port):
    """A LabServer for api, listening on host:port (port 0: a free one), its .loopback True where no other machine
    can reach it; InputError where it cannot listen there."""
    address, loopback = listening_address(host)
    try:
        server = LabServer((address, port), api, host)
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise InputError(f"the port {port} on {host} is taken (by another lab?): give --port N, or --port 0 for "
                             f"a free one") from None
        raise InputError(f"cannot listen on {host}:{port} ({err.strerror or err}): give --host an address of this "
                         f"machine, or leave it out for 127.0.0.1") from None
    server.loopback = loopback
    return server
