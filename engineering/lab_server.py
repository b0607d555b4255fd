"""The lab's server (lab.py): its page and JSON API on this machine, the rules that keep a server on a person's
machine from becoming a door into it, and the models it answers with.

    server = lab_server.start(api, "127.0.0.1", 8765)  # api: {("POST", "/api/look"): function of the body, ...}
    server.serve_forever()

- It listens on 127.0.0.1 unless the person asks for another address, and answers only requests whose Host header
  names the address it listens on, or localhost, with its port: a site whose name is made to point at 127.0.0.1
  (DNS rebinding) sends its own name, and is refused.
- A POST carries one JSON object of at most MAX_BODY bytes, as Content-Type application/json: a page of another
  site cannot send that without asking first, and is never told yes; one that says it comes from another origin is
  refused.
- GET serves the page's own files, read once from engineering/lab/ under fixed names: no path a request names is
  ever opened, and any other path is 404.
- Every refusal is a status and {"error": "one line"}: a malformed request 400 saying what to send, a person's bad
  input (InputError) 400 with its message. A bug in the code (a learner's broken backward) prints its traceback here,
  answers 500 with one line, and the server goes on.
- One API call at a time (LabServer.computing): a look or a learn keeps every core busy already, and a GPT-2
  backward holds gigabytes, so two at once would only share the cores and double the memory.
"""

import collections
import errno
import http.server
import json
import math
import socket
import sys
import threading
import traceback
from http import HTTPStatus
from pathlib import Path

from engineering import checkpoint, gpt2, runs
from engineering.errors import InputError

MAX_BODY = 64 * 1024  # bytes of a request's body: a text of thousands of tokens fits many times over
DRAIN = 1024 * 1024  # bytes of a refused body still read, so that the refusal reaches a client still sending it
TIMEOUT = 30  # seconds a connection may leave the server waiting for the rest of its request
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

def shown(value):
    """A value a request sent, for a message: its JSON, cut short. Example: shown("x" * 100) -> '"xxx...' (40 long)"""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def text_field(body, name):
    """body[name]: a text that is not empty and is valid Unicode; RequestError 400 saying what to send."""
    value = body.get(name)
    if not isinstance(value, str) or not value:
        got = "nothing" if name not in body else shown(value)
        raise RequestError(400, f'"{name}" must be a text that is not empty, such as {{"{name}": "The cat sat"}}; '
                                f"got {got}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which JSON's \\ud800 can spell
        raise RequestError(400, f'"{name}" is not valid Unicode (it holds half of a surrogate pair)') from None
    return value


def number_field(body, name, default=None, least=0.0):
    """body[name], or default where it is left out (None: it must be there): a finite number, least or more."""
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < least:
        got = "nothing" if name not in body else shown(value)
        raise RequestError(400, f'"{name}" must be a finite number, {least:g} or more; got {got}')
    return float(value)


def whole_field(body, name, default, least=0, most=2 ** 63 - 1):
    """body[name], or default where it is left out: a whole number from least to most."""
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise RequestError(400, f'"{name}" must be a whole number from {least} to {most}; got {shown(value)}')
    return value


def name_field(body, name):
    """body[name]: a name (a text that is not empty), or None where it is left out or null."""
    value = body.get(name)
    if value is not None and (not isinstance(value, str) or not value or len(value) > 255):
        raise RequestError(400, f'"{name}" must be a name from the list, or null; got {shown(value)}')
    return value


# --- the models the lab answers with --------------------------------------------------------------------------

def model_stamp(folder):
    """When and how large each file of a model in folder is (None where it is missing): it changes with any save."""
    stamp = []
    for name in ("model.json", *checkpoint.MODEL_FILES, *gpt2.FILES):  # a run's files, or a GPT-2 folder's
        try:
            info = (Path(folder) / name).stat()
            stamp.append((info.st_mtime_ns, info.st_size))
        except OSError:
            stamp.append(None)
    return tuple(stamp)


Held = collections.namedtuple("Held", "model stamp")


class Models:
    """The models the lab answers with: the one it started with (run None), and the runs of home chosen by their
    name in the listing, never by a path. Each is read once and kept while its files stay as they were; a run that
    saves a better model as it trains is read again. Where a model's folder is deleted or damaged after it was read,
    the copy in memory still answers, and the warning says so."""

    KEEP = 3  # models held at once, the first included: GPT-2 124M is 650 MB of float32

    def __init__(self, first, home):
        self.first, self.home = first, Path(home)
        self.held = collections.OrderedDict({first.folder: Held(first, model_stamp(first.folder))})

    def folder_of(self, run):
        """The folder of the run named run (None: the first model's): a run of the listing, or one the lab holds (a
        run deleted since); RequestError 404 where no run has that name."""
        if run is None:
            return self.first.folder
        named = {folder.name: folder for folder in runs.run_folders(self.home)}
        named.update({folder.name: folder for folder in self.held if folder.parent == self.home / "runs"})
        if run not in named:
            raise RequestError(404, f"there is no run named {shown(run)} in {self.home}/runs/; choose one from the "
                                    f"list")
        return named[run]

    def get(self, run):
        """(the model of the run named run, a warning: "" where there is nothing to warn of)."""
        folder = self.folder_of(run)
        held, now = self.held.get(folder), model_stamp(folder)
        if held is not None and held.stamp == now:
            return held.model, ""
        if held is not None and not any(now):
            return held.model, f"{folder}/ was deleted after the lab read it: this is its model as the lab read it"
        try:
            model = checkpoint.load(folder)
        except InputError as err:
            if held is None:
                raise
            return held.model, f"{err}. This is the model the lab read before"
        self.held[folder] = Held(model, now)
        self.held.move_to_end(folder)
        while len(self.held) > self.KEEP:  # the oldest chosen goes; the first model stays
            del self.held[next(key for key in self.held if key != self.first.folder)]
        if held is None:
            return model, ""
        return model, f"the run {folder.name} saved a new model since the lab read it: this is the new one"


class FolderMemo:
    """compute(folder), computed again only when the folder's files change: the page asks for the runs every few
    seconds, and summarizing a run reads its model's files whole (their sha256)."""

    def __init__(self):
        self.kept = {}

    def __call__(self, folder, compute):
        stamp = tuple(sorted((path.name, path.stat().st_mtime_ns, path.stat().st_size)
                             for path in Path(folder).iterdir() if path.is_file()))
        kept = self.kept.get(folder)
        if kept is None or kept[0] != stamp:
            kept = self.kept[folder] = (stamp, compute(folder))
        return kept[1]


# --- the server -----------------------------------------------------------------------------------------------

def one_line(text, most=300):
    """text on one line, at most `most` characters. Example: one_line("a\\n  b") -> "a b" """
    text = " ".join(str(text).split())
    return text if len(text) <= most else text[:most - 3] + "..."


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "numpy-gpt-lab"
    sys_version = ""
    timeout = TIMEOUT
    default_request_version = "HTTP/1.0"  # a request without a version still gets a status line, not a bare body

    def do_GET(self):
        self.answer("GET")

    def do_POST(self):
        self.answer("POST")

    def refuse_method(self):
        self.send_json(405, {"error": f"the lab answers GET and POST only, not {one_line(self.command, 20)}"})

    do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = refuse_method

    def answer(self, method):
        self.body_read = False
        try:
            self.check_host(method)
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
            if method == "POST" and not self.body_read:
                self.drain((self.headers.get("Content-Length") or "0").strip())
            self.send_json(err.status, {"error": one_line(err)})
        except InputError as err:  # a person's bad input, found by the project's code: a damaged run, say
            self.send_json(400, {"error": one_line(err)})
        except Exception as err:  # a bug: its traceback where the lab runs, one line on the page
            traceback.print_exc()
            sys.stderr.flush()
            self.send_json(500, {"error": one_line(f"a bug in the code: {type(err).__name__}: {err} (its traceback "
                                                   f"is in the terminal where the lab runs)")})

    def check_host(self, method):
        hosts = self.headers.get_all("Host") or []
        if len(hosts) != 1 or hosts[0].strip().lower() not in self.server.hosts:
            raise RequestError(403, f"this lab answers only requests to {self.server.url}")
        origin = self.headers.get("Origin")
        if method == "POST" and origin is not None and origin.lower() not in {f"http://{h}" for h in self.server.hosts}:
            raise RequestError(403, f"this lab answers only its own page, {self.server.url}")

    def json_body(self):
        """The request's body: one JSON object, at most MAX_BODY bytes; RequestError saying what to send."""
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise RequestError(415, "send the body as JSON, with Content-Type: application/json")
        if self.headers.get("Transfer-Encoding") is not None:
            raise RequestError(411, "send the body with a Content-Length, not in chunks")
        length = (self.headers.get("Content-Length") or "").strip()
        if not (length.isascii() and length.isdigit()):
            raise RequestError(411, "send the body with its Content-Length, in bytes")
        if int(length) > MAX_BODY:
            raise RequestError(413, f"the body is {int(length):,} bytes; the lab takes at most {MAX_BODY // 1024} KiB: "
                                    f"send a shorter text")
        data = self.rfile.read(int(length))
        self.body_read = True
        if len(data) < int(length):
            raise RequestError(400, "the body ended before its Content-Length")
        try:
            body = json.loads(data.decode("utf-8"), parse_constant=refuse_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            body = None
        if not isinstance(body, dict):
            raise RequestError(400, 'send one JSON object, such as {"text": "The cat sat"}')
        return body

    def drain(self, length):
        """Read and drop up to DRAIN bytes of a refused body (length: its Content-Length, as sent), so that a client
        still sending it reads the refusal: closing on a body not read would reset the connection, answer and all."""
        self.close_connection = True
        left = min(int(length), DRAIN) if length.isascii() and length.isdigit() else 0
        while left > 0 and (chunk := self.rfile.read(min(left, 65536))):
            left -= len(chunk)

    def send_json(self, status, value):
        self.send(status, json.dumps(value, allow_nan=False, separators=(",", ":")).encode("utf-8"),
                  "application/json")

    def send(self, status, body, content_type):
        try:
            self.send_response(status)
            for name, value in {"Content-Type": content_type, "Content-Length": str(len(body)), **HEADERS}.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":  # an answer to HEAD has headers only
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the page left before its answer came: nothing to tell it

    def send_error(self, code, message=None, explain=None):
        """A request the HTTP parser refused (a broken request line, too many headers, an unknown method): JSON too."""
        self.close_connection = True
        self.send_json(code, {"error": one_line(message or HTTPStatus(code).phrase)})

    def log_message(self, *args):
        pass  # one line per request would bury what matters in the terminal: a bug's traceback


def refuse_constant(name):
    raise ValueError(f"{name} is not a number JSON has")


class LabServer(http.server.ThreadingHTTPServer):
    daemon_threads = True  # a connection left open never keeps the lab from stopping

    def __init__(self, address, api):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.api, self.computing = api, threading.Lock()
        self.static = {path: ((PAGE / name).read_bytes(), kind) for path, (name, kind) in STATIC.items()}
        host = f"[{address[0]}]" if ":" in address[0] else address[0]
        self.url = f"http://{host}:{self.server_port}/"
        self.hosts = {f"{name}:{self.server_port}" for name in (*LOCAL, host.lower())}


def start(api, host, port):
    """A LabServer for api, listening on host:port (port 0: a free one); InputError where it cannot listen there."""
    try:
        return LabServer((host, port), api)
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise InputError(f"the port {port} on {host} is taken (by another lab?): give --port N, or --port 0 for "
                             f"a free one") from None
        raise InputError(f"cannot listen on {host}:{port} ({err.strerror or err}): give --host an address of this "
                         f"machine, or leave it out for 127.0.0.1") from None
