"""lab.py: every number the lab serves is the project's own functions' on the same ids, the model never changes
under a request, the server refuses what it must and keeps serving, and the page draws every view in Chromium.

The server runs in this process, in a thread, on a free port; its model is the tiny play that conftest trains once,
a model of random weights with three blocks (where the logit lens has layers to look through), and a small GPT-2
folder written here offline.
"""

import collections
import contextlib
import http.client
import ipaddress
import json
import math
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import types
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import lab
import transformer
from engineering import checkpoint, files, lab_models, lab_server, run_log, runs
from conftest import tiny_play
from engineering.errors import InputError
from transformer import Sampling, filtered_probs, generate
from tokenizer import END_OF_TEXT, byte_stand_ins
from transformer import ModelConfig, cross_entropy_forward, forward, init_params, loss_and_grads, pack, softmax

REPO = Path(__file__).resolve().parent.parent
SETTINGS = types.SimpleNamespace(temperature=0.8, top_k=0, top_p=0.9, seed=42)  # config.py's, as the page starts
SAMPLING = Sampling(SETTINGS.temperature, SETTINGS.top_k, SETTINGS.top_p)
TEXT = "ROMEO:\nthe moon is high tonight,\no stay a while with me;\n"
SAMPLE_FIRST_ROW = 'Kofi gave Ada a jar of honey. Ada smiled and said, "Thank you!"\n'  # data/sample.csv's first
REFUSALS = {400, 403, 404, 405, 408, 411, 413, 414, 415, 431}  # every status a malformed request may get


# --- the lab, served in this process ----------------------------------------------------------------------------

class Served:
    """A lab served on 127.0.0.1 in a thread, and requests to it."""

    def __init__(self, server):
        self.server, self.port = server, server.server_port

    def request(self, method, path, body=None, headers=None, raw_body=None):
        """(status, the JSON answer) of one request; body is sent as JSON, raw_body as it is."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        data = raw_body if raw_body is not None else None if body is None else json.dumps(body).encode("utf-8")
        sent = {"Content-Type": "application/json"} if data is not None else {}
        connection.request(method, path, body=data, headers={**sent, **(headers or {})})
        response = connection.getresponse()
        content = response.read()
        connection.close()
        if response.getheader("Content-Type") == "application/json":
            return response.status, json.loads(content)
        return response.status, content

    def post(self, path, body, **headers):
        return self.request("POST", path, body, headers)

    def raw(self, data):
        """(status, the answer's body) of bytes sent as they are, then the end of what is sent; (None, b"") where the
        connection closes with no answer."""
        answers = self.exchange(data)
        return (answers[0].status, answers[0].body) if answers else (None, b"")

    def exchange(self, data, pieces=1, pause=0.0):
        """Every Answer to bytes sent as they are (in `pieces` parts, `pause` seconds apart: a trickle), then the end
        of what is sent, in the order they came, until the lab closes the connection."""
        received = b""
        with contextlib.suppress(ConnectionResetError, BrokenPipeError), \
                socket.create_connection(("127.0.0.1", self.port), timeout=30) as connection:
            cuts = sorted(random.Random(len(data)).sample(range(1, len(data)), min(pieces, len(data)) - 1))
            for start, end in zip([0, *cuts], [*cuts, len(data)]):
                connection.sendall(data[start:end])
                time.sleep(pause if end < len(data) else 0)
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_WR)
            while chunk := connection.recv(65536):
                received += chunk
        return answers_in(received)


Answer = collections.namedtuple("Answer", "status headers body")


def answers_in(received):
    """The answers in the bytes a connection received, each a status line, headers and a body of its Content-Length;
    bytes that are no answer (a bare body, as HTTP/0.9 has) are an Answer of status 0 holding them."""
    answers = []
    while received:
        head, _, rest = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        if not lines[0].startswith("HTTP/1."):
            return [*answers, Answer(0, {}, received)]
        headers = dict(line.split(": ", 1) for line in lines[1:])
        length = int(headers["Content-Length"])
        answers.append(Answer(int(lines[0].split()[1]), headers, rest[:length]))
        received = rest[length:]
    return answers


@contextlib.contextmanager
def serving(model, home, host="127.0.0.1"):
    server = lab_server.start(lab.api(lab_models.Models(model, home), SETTINGS), host, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(server)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def play(tiny_play_checkpoint):
    return checkpoint.load(tiny_play_checkpoint)


@pytest.fixture(scope="module")
def served(play):
    with serving(play, runs.home_of(play.folder)) as lab_served:
        yield lab_served


@pytest.fixture(scope="module")
def deep(play):
    """Random weights with three blocks and the tiny play's tokenizer: a model whose layers the lens can tell apart."""
    cfg = ModelConfig(play.cfg.vocab_size, 16, 16, 2, 3, 32, 1e-5)
    params = init_params(cfg, np.random.default_rng(3), np.float32)
    return checkpoint.Checkpoint(params, cfg, play.tokenizer, {}, play.folder)


def ids_of(model, text):
    return np.array(model.tokenizer.encode(text)[-lab.tokens_read(model):])


# --- the numbers are the project's --------------------------------------------------------------------------------

def test_a_look_is_the_forward_the_softmax_and_the_sampling_of_the_project(served, play):
    status, look = served.post("/api/look", {"text": TEXT})
    assert status == 200, look
    ids = ids_of(play, TEXT)
    logits, (_, block_caches, _, _) = forward(play.params, ids, play.cfg)
    probs = softmax(logits.astype(np.float64))  # the page's are float32's: equal to 1e-6
    assert [token["id"] for token in look["tokens"]] == ids.tolist()
    assert "".join(token["text"] for token in look["tokens"]) == play.tokenizer.decode(ids.tolist())
    for layer, maps in enumerate(look["attention"]):  # [L][nh][T][T], sent to 4 decimals
        np.testing.assert_allclose(maps, block_caches[layer].attention.attn[0], atol=5e-5 + 1e-7)
    assert np.array(look["attention"]).shape == (1, 2, len(ids), len(ids))
    losses = [token["loss"] for token in look["tokens"]]
    assert losses[0] is None
    np.testing.assert_allclose(losses[1:], -np.log(probs[np.arange(len(ids) - 1), ids[1:]]), rtol=1e-4, atol=1e-6)
    for t, guesses in enumerate(look["next"]):
        listed = [guess["prob"] for guess in guesses]
        np.testing.assert_allclose(listed, np.sort(probs[t])[::-1][:10], rtol=1e-5)
        np.testing.assert_allclose(listed, probs[t, [guess["id"] for guess in guesses]], rtol=1e-5)
        kept = filtered_probs(logits[t], SAMPLING)
        np.testing.assert_allclose(look["kept"][t], kept[[guess["id"] for guess in guesses]], rtol=1e-12)
        assert look["kept_counts"][t] == np.count_nonzero(kept)
    assert look["sampling"] == {"temperature": 0.8, "top_k": 0, "top_p": 0.9}
    assert look["model"]["name"] == play.folder.name and look["model"]["warning"] == ""


def test_the_lens_after_each_block_is_what_a_model_cut_there_predicts(deep):
    """Row l + 1 of view 4 is the forward of the same weights with only the first l + 1 blocks; the last row is the
    model's own prediction."""
    look = lab.look(deep, TEXT, SAMPLING)
    ids = ids_of(deep, TEXT)
    assert [row["after"] for row in look["layers"]] == ["the embeddings", "block 0", "block 1", "block 2"]
    for blocks in (1, 2, 3):
        cut = replace(deep.cfg, num_layers=blocks)
        params = pack({name: deep.params[name] for name in transformer.param_shapes(cut)})
        probs = softmax(forward(params, ids, cut)[0].astype(np.float64))
        row = look["layers"][blocks]
        np.testing.assert_allclose([top[0]["prob"] for top in row["top"]], probs.max(axis=-1), rtol=1e-5)
        np.testing.assert_allclose(row["next_prob"][:-1], probs[np.arange(len(ids) - 1), ids[1:]], rtol=1e-4)
        assert row["next_prob"][-1] is None
    embeddings, first = look["layers"][0]["top"], look["layers"][1]["top"]
    assert [top[0]["prob"] for top in embeddings] != [top[0]["prob"] for top in first]


def test_a_learn_is_loss_and_grads_and_a_step_on_a_copy(deep):
    before = transformer.flat_buffer(deep.params).copy()
    text, lr = TEXT, 0.5
    learned = lab.learn(deep, text, lr)
    assert np.array_equal(transformer.flat_buffer(deep.params), before), "a learn changed the lab's model"
    ids = ids_of(deep, text)
    loss, grads = loss_and_grads(deep.params, ids[:-1], ids[1:], deep.cfg)
    assert learned["loss"] == pytest.approx(loss, rel=1e-6)
    assert list(learned["grad_norms"]) == list(deep.params)
    for name, grad in grads.items():
        assert learned["grad_norms"][name] == pytest.approx(float(np.linalg.norm(grad)), rel=1e-5, abs=1e-12)
    assert sorted(sum((group["tensors"] for group in learned["groups"]), [])) == sorted(deep.params)
    np.testing.assert_allclose(learned["input_grad_norms"], np.linalg.norm(grads["pos_emb"][:len(ids) - 1], axis=-1),
                               rtol=1e-5)
    once = [t for t, i in enumerate(ids[:-1]) if list(ids[:-1]).count(i) == 1]  # their token's gradient is theirs alone
    assert once
    np.testing.assert_allclose([learned["input_grad_norms"][t] for t in once],
                               np.linalg.norm(grads["tok_emb"][ids[once]], axis=-1), rtol=1e-4)
    stepped = {name: param - lr * grads[name] for name, param in deep.params.items()}
    after, _ = cross_entropy_forward(forward(stepped, ids[:-1], deep.cfg)[0], ids[1:])
    assert learned["loss_after"] == pytest.approx(after, rel=1e-5)
    assert np.mean(learned["position_losses"]) == pytest.approx(loss, rel=1e-5)
    assert np.mean(learned["position_losses_after"]) == pytest.approx(after, rel=1e-5)
    assert learned["loss_after"] < learned["loss"]  # a short step down the gradient lowers the loss


def test_a_step_too_long_gives_no_number_said_as_such(deep):
    learned = lab.learn(deep, TEXT, 1e300)  # p - lr * g overflows float32
    json.dumps(learned, allow_nan=False)  # the page is sent JSON, which has no NaN
    assert learned["loss_after"] is None and math.isfinite(learned["loss"])
    assert learned["loss_after_said"] == lab.NO_LOSS_AFTER and "too long" in lab.NO_LOSS_AFTER
    assert all(loss is None for loss in learned["position_losses_after"])
    assert lab.learn(deep, TEXT, 0.5)["loss_after_said"] is None


def test_the_page_opens_with_the_start_of_the_text_the_model_was_trained_on(served, play):
    status, started = served.request("GET", "/api/start")
    assert status == 200 and started["text"] == tiny_play().split("\n\n")[0] + "\n"  # its first speech, whole
    assert started["text_from"] == f"the start of the text the model was trained on, {play.meta['corpus']['path']}"
    assert started["lr"] == lab.FIRST_LR


def test_a_model_whose_corpus_is_gone_or_changed_opens_with_the_sample(deep, play, tmp_path):
    assert lab.first_text(deep) == {"text": SAMPLE_FIRST_ROW, "text_from": "the first row of the project's sample "
                                    "corpus, data/sample.csv (the model records no corpus)"}
    changed = tmp_path / "play.txt"
    changed.write_text("a text the model never read\n", encoding="utf-8")
    moved = replace(play, meta={**play.meta, "corpus": {**play.meta["corpus"], "path": str(changed)}})
    assert lab.first_text(moved)["text_from"].endswith(f"({changed} has changed since the model was trained on it)")
    changed.unlink()
    assert "its own corpus cannot be read: [Errno 2] No such file" in lab.first_text(moved)["text_from"]
    assert lab.first_text(moved)["text"] == SAMPLE_FIRST_ROW


@pytest.mark.parametrize("text, kind, first", [("ROMEO:\nO, she doth\n\nJULIET:", "text", "ROMEO:\nO, she doth\n"),
                                               ("\n\nthe cat sat.\nthe dog ran.\n", "rows", "the cat sat.\n"),
                                               ("a line\n" * 100, "rows", "a line\n"),
                                               ("verse\n" * 100, "text", "verse\n" * 50),  # 300 characters at most
                                               ("x" * 400, "text", "x" * 300)])
def test_the_opening_is_the_first_row_or_paragraph_cut_at_a_line(text, kind, first):
    assert lab.opening(text, kind) == first


def test_the_first_step_size_lowers_the_loss_of_a_trained_models_own_text(play):
    """The page starts at FIRST_LR; on the tiny play, trained, it lowers the loss of each of its five speeches, and
    the first-order figure L - lr |g|^2 is within a tenth of the loss after: the step is short enough to be nearly
    straight. (At the page's old start, 0.1, the first-order figure fell below 0 on three of the five.)"""
    for speech in tiny_play().split("\n\n")[:5]:
        learned = lab.learn(play, speech, lab.FIRST_LR)
        assert learned["loss_after"] < learned["loss"]
        assert abs(learned["predicted_loss_after"] - learned["loss_after"]) < 0.1 * (learned["loss"] -
                                                                                   learned["predicted_loss_after"])


def test_continue_draws_the_token_generate_draws_with_that_seed(served, play):
    status, drawn = served.post("/api/continue", {"text": "ROMEO:\nthe mo", "seed": 7, "temperature": 1.0})
    assert status == 200, drawn
    ids = ids_of(play, "ROMEO:\nthe mo")
    rng = np.random.default_rng(7)
    expected = next(generate(play.params, play.cfg, ids.tolist(), 1, 16, Sampling(1.0, 0, 0.9), rng))
    assert drawn["id"] == expected and drawn["text"] == "ROMEO:\nthe mo" + play.tokenizer.decode([expected])


def test_a_long_text_is_cut_to_its_last_tokens_and_unknown_characters_are_named(served, play):
    text = TEXT * 6 + "Z~"
    status, look = served.post("/api/look", {"text": text})
    known = play.tokenizer.encode(TEXT * 6)
    assert status == 200 and look["window"] == 16
    assert look["cut"] == len(known) - 16 and [t["id"] for t in look["tokens"]] == known[-16:]
    assert look["left_out"] == ["Z", "~"]
    status, refused = served.post("/api/look", {"text": "ZZ~"})
    assert status == 400 and "'Z', '~'" in refused["error"] and "never seen" in refused["error"]


def test_the_lab_reads_at_most_most_tokens_of_a_model_that_reads_more(play):
    cfg = ModelConfig(play.cfg.vocab_size, 200, 8, 2, 1, 16, 1e-5)  # no seq_len recorded: it reads 200
    model = checkpoint.Checkpoint(init_params(cfg, np.random.default_rng(0), np.float32), cfg, play.tokenizer, {},
                                  play.folder)
    known = play.tokenizer.encode(TEXT * 10)
    look = lab.look(model, TEXT * 10, SAMPLING)
    assert len(known) > 200 and lab.MOST_TOKENS == 128
    assert [t["id"] for t in look["tokens"]] == known[-128:] and look["cut"] == len(known) - 128
    assert look["window"] == 128 and np.array(look["attention"]).shape == (1, 2, 128, 128)


# --- the server's rules ---------------------------------------------------------------------------------------------

def request_bytes(port, body=b'{"text": "ROMEO"}', path="/api/look", host=None, headers=""):
    host = f"127.0.0.1:{port}" if host is None else host
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{headers}\r\n").encode() + body


BAD = {  # what is sent -> (the status, words of the answer)
    "a body over 64 KiB": (lambda s: s.post("/api/look", {"text": "a" * 70_000}), 413, "64 KiB"),
    "not JSON": (lambda s: s.request("POST", "/api/look", raw_body=b"{text: 1"), 400, "JSON object"),
    "JSON that is not an object": (lambda s: s.post("/api/look", ["ROMEO"]), 400, "JSON object"),
    "no text": (lambda s: s.post("/api/look", {}), 400, '"text" must be'),
    "a text that is a number": (lambda s: s.post("/api/look", {"text": 5}), 400, '"text" must be'),
    "an empty text": (lambda s: s.post("/api/look", {"text": ""}), 400, "not empty"),
    "a lone surrogate": (lambda s: s.request("POST", "/api/look", raw_body=b'{"text": "a\\ud800"}'), 400, "Unicode"),
    "no learning rate": (lambda s: s.post("/api/learn", {"text": "ROMEO"}), 400, '"lr" must be'),
    "a negative learning rate": (lambda s: s.post("/api/learn", {"text": "ROMEO", "lr": -0.1}), 400, "0 or more"),
    "NaN": (lambda s: s.request("POST", "/api/learn", raw_body=b'{"text": "ROMEO", "lr": NaN}'), 400, "JSON object"),
    "Infinity": (lambda s: s.request("POST", "/api/learn", raw_body=b'{"text": "ROMEO", "lr": Infinity}'), 400, "JSON"),
    "a number past float": (lambda s: s.request("POST", "/api/learn", raw_body=b'{"text": "ROMEO", "lr": 1e999}'),
                            400, "float's range"),
    "an integer past float in temperature": (lambda s: s.post("/api/look", {"text": "R", "temperature": 10 ** 309}),
                                              400, "float's range"),
    "an integer past float in top_p": (lambda s: s.post("/api/look", {"text": "R", "top_p": -10 ** 400}), 400,
                                       "float's range"),
    "an integer past float in lr": (lambda s: s.post("/api/learn", {"text": "RO", "lr": 10 ** 1000}), 400,
                                    "float's range"),
    "an integer past int64 in seed": (lambda s: s.post("/api/continue", {"text": "R", "seed": 10 ** 1000}), 400,
                                      "whole number"),
    "an integer of 5,000 digits": (lambda s: s.request("POST", "/api/learn", raw_body=b'{"text": "RO", "lr": 1'
                                                       + b"0" * 5000 + b"}"), 400, "JSON object"),
    "top_p as the text NaN": (lambda s: s.post("/api/look", {"text": "R", "top_p": "NaN"}), 400,
                              '"top_p" must be a number within a float\'s range (±1.8e308), such as {"top_p": 0.5}; '
                              'got the text "NaN"'),
    "top_p above 1": (lambda s: s.post("/api/look", {"text": "R", "top_p": 2}), 400, "top_p must be in (0, 1]"),
    **{f"an array 982 deep in {name}": (lambda s, name=name: s.request(
        "POST", "/api/continue" if name == "seed" else "/api/learn",
        raw_body=f'{{"text": "RO", "lr": 0.1, "{name}": {"[" * 982}{"]" * 982}}}'.encode()), 400, "4 deep")
       for name in ("top_k", "temperature", "seed", "lr")},
    "brackets inside a text are no nesting": (lambda s: s.post("/api/look", {"text": "[" * 50, "top_k": [[[1]]]}), 400,
                                              '"top_k" must be a whole number'),
    "a learning rate as text": (lambda s: s.post("/api/learn", {"text": "ROMEO", "lr": "0.1"}), 400, '"lr"'),
    "a learning rate true": (lambda s: s.post("/api/learn", {"text": "ROMEO", "lr": True}), 400, '"lr"'),
    "one token to learn from": (lambda s: s.post("/api/learn", {"text": "R", "lr": 0.1}), 400, "two tokens"),
    "a negative temperature": (lambda s: s.post("/api/look", {"text": "R", "temperature": -1}), 400, "temperature"),
    "top_p 0": (lambda s: s.post("/api/look", {"text": "R", "top_p": 0}), 400, "top_p"),
    "top_k 2.5": (lambda s: s.post("/api/look", {"text": "R", "top_k": 2.5}), 400, "top_k"),
    "a seed below 0": (lambda s: s.post("/api/continue", {"text": "R", "seed": -1}), 400, "seed"),
    "a run not listed": (lambda s: s.post("/api/look", {"text": "R", "run": "nope"}), 404, "no run named"),
    "a run as a path": (lambda s: s.post("/api/look", {"text": "R", "run": "../../etc"}), 404, "no run named"),
    "a run that is a number": (lambda s: s.post("/api/look", {"text": "R", "run": 3}), 400, "name from the list"),
    "another site's name (DNS rebinding)": (lambda s: s.post("/api/look", {"text": "R"}, Host=f"evil.example:{s.port}"),
                                            403, "only requests to"),
    "the right name on another port": (lambda s: s.post("/api/look", {"text": "R"}, Host="127.0.0.1:1"), 403, "only"),
    "no Host": (lambda s: s.raw(b"GET /api/start HTTP/1.0\r\n\r\n"), 403, "only requests to"),
    "two Hosts": (lambda s: s.raw(request_bytes(s.port, headers=f"Host: 127.0.0.1:{s.port}\r\n")), 400, "twice"),
    **{f"{name} twice": (lambda s, name=name, value=value: s.raw(request_bytes(s.port, headers=f"{name}: {value}\r\n")),
                         400, f"{name} is sent twice") for name, value in [
        ("Content-Type", "application/json"), ("Content-Length", "17")]},
    "Origin twice, the first the lab's own": (lambda s: s.raw(request_bytes(
        s.port, headers=f"Origin: http://127.0.0.1:{s.port}\r\nOrigin: http://evil.example\r\n")), 400, "twice"),
    "a Content-Length of 5,000 digits": (lambda s: s.raw(request_bytes(s.port).replace(
        b"Length: 17", b"Length: " + b"9" * 5000)), 413, "more than 999,999,999 bytes"),
    "a Content-Length of 5,000 digits to another site's name": (lambda s: s.raw(request_bytes(
        s.port, host="evil.example").replace(b"Length: 17", b"Length: " + b"9" * 5000)), 403, "only requests to"),
    "a Content-Length of 5,000 digits, a form's content type": (lambda s: s.raw(request_bytes(s.port).replace(
        b"Length: 17", b"Length: " + b"9" * 5000).replace(b"application/json", b"text/plain")), 415, "JSON"),
    "a Content-Length of 5,000 digits to no address": (lambda s: s.raw(request_bytes(s.port, path="/nowhere").replace(
        b"Length: 17", b"Length: " + b"9" * 5000)), 404, "not one of"),
    "a negative Content-Length": (lambda s: s.raw(request_bytes(s.port).replace(b"Length: 17", b"Length: -17")), 411,
                                  "Content-Length"),
    "a request line of spaces": (lambda s: s.raw(b"   \r\n\r\n"), 400, "send a request line"),
    "a method http.server does not know": (lambda s: s.raw(f"BREW / HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n\r\n"
                                                           .encode()), 405, "GET and POST only, not BREW"),
    "HTTP/2 in the request line": (lambda s: s.raw(b"GET / HTTP/2.0\r\n\r\n"), 400, "Invalid HTTP version"),
    "HTTP/0.9 in the request line": (lambda s: s.raw(f"GET / HTTP/0.9\r\nHost: 127.0.0.1:{s.port}\r\n\r\n".encode()),
                                     400, "HTTP/1.0 and HTTP/1.1, not HTTP/0.9"),
    "a page of another origin": (lambda s: s.post("/api/look", {"text": "R"}, Origin="http://evil.example"), 403,
                                 "own page"),
    "a form's content type": (lambda s: s.post("/api/look", {"text": "R"}, **{"Content-Type": "text/plain"}), 415,
                              "application/json"),
    "no Content-Length": (lambda s: s.raw(request_bytes(s.port).replace(b"Content-Length: 17\r\n", b"")), 411,
                          "Content-Length"),
    "a body in chunks": (lambda s: s.raw(request_bytes(s.port, headers="Transfer-Encoding: chunked\r\n")), 411,
                         "chunks"),
    "a body shorter than said": (lambda s: s.raw(request_bytes(s.port).replace(b"Length: 17", b"Length: 99")), 400,
                                 "ended before"),
    "a path out of the page's folder": (lambda s: s.raw(f"GET /../lab_server.py HTTP/1.1\r\nHost: 127.0.0.1:{s.port}"
                                                        f"\r\n\r\n".encode()), 404, "not one of"),
    "a file of the project": (lambda s: s.request("GET", "/lab.py"), 404, "not one of"),
    "a file beside the page's": (lambda s: s.request("GET", "/engineering/lab/lab.js"), 404, "not one of"),
    "an escaped path": (lambda s: s.request("GET", "/%2e%2e/%2e%2e/etc/passwd"), 404, "not one of"),
    "GET for a POST": (lambda s: s.request("GET", "/api/look"), 405, "POST /api/look"),
    "PUT": (lambda s: s.request("PUT", "/api/look", {"text": "R"}), 405, "GET and POST only"),
    "a broken request line": (lambda s: s.raw(b"GARBAGE\r\n\r\n"), 400, "Bad request"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_request_gets_its_status_and_one_line_and_the_lab_goes_on(served, case):
    send, status, words = BAD[case]
    got, answer = send(served)
    if isinstance(answer, bytes):
        answer = json.loads(answer)
    assert got == status and words in answer["error"] and "\n" not in answer["error"], answer
    assert served.post("/api/look", {"text": "ROMEO"})[0] == 200


def stalled(port, data):
    """(status, the answer's JSON) for bytes sent on a connection left open: the rest never comes."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(data)
        head, _, body = connection.makefile("rb").read().partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_a_body_that_stalls_is_told_408_and_one_too_long_413_at_once(served, monkeypatch, capfd):
    monkeypatch.setattr(lab_server, "TIMEOUT", 0.5)
    short = request_bytes(served.port).replace(b"Length: 17", b"Length: 1000")[:-7]  # 10 bytes of 1,000
    status, answer = stalled(served.port, short)
    assert status == 408 and "not whole within 0.5 s" in answer["error"]
    huge = request_bytes(served.port).replace(b"Length: 17", b"Length: 100000000")  # 100 MB promised, 17 sent
    assert stalled(served.port, huge) == (413, {"error": "the body is 100,000,000 bytes; the lab takes at most 64 KiB: "
                                                         "send a shorter text"})
    headers = request_bytes(served.port).split(b"Content-Type")[0]  # the headers stop after the Host
    status, answer = stalled(served.port, headers)
    assert status == 408 and "headers were not whole within 0.5 s" in answer["error"]
    assert "Traceback" not in capfd.readouterr().err


def worst_body(size):
    """The review's worst body, size bytes: a string never closed, of escaped quotes (a " at every other byte)."""
    return (b'{"text":"' + b'\\"' * size)[:size]


def cpu_seconds(function, argument, repeats=9):
    """The least CPU time of this thread that function(argument) took, of repeats calls: a count of the work done,
    which other processes on a busy machine do not lengthen, as they lengthen the time on the clock."""
    least = math.inf
    for _ in range(repeats):
        started = time.thread_time()
        function(argument)
        least = min(least, time.thread_time() - started)
    return least


def test_the_nesting_of_a_body_is_found_in_time_that_grows_with_its_length_alone():
    """A body twice as long takes twice the work, not four times: the review's body of 64 KiB took 19.7 s, the
    square of its length, and held every other request that long."""
    half, whole = (worst_body(lab_server.MAX_BODY // 4).decode(), worst_body(lab_server.MAX_BODY // 2).decode())
    assert files.json_nesting(whole) == 1
    ratio = cpu_seconds(files.json_nesting, whole) / cpu_seconds(files.json_nesting, half)
    assert ratio < 3, f"twice the body took {ratio:.1f} times the work: 2 is linear, 4 quadratic"


def test_the_worst_body_is_refused_while_the_lab_computes_for_another(served):
    """The bounds are read before the one-at-a-time lock (LabServer.computing) is taken: while a learn holds it, the
    review's worst body of 64 KiB is still refused, and a file of the page still served."""
    with served.server.computing:  # as a learn of GPT-2 holds it for seconds
        status, answer = served.request("POST", "/api/look", raw_body=worst_body(lab_server.MAX_BODY))
        assert status == 400 and "send one JSON object" in answer["error"]
        assert served.request("GET", "/lab.css")[0] == 200


def test_pipelined_requests_are_each_answered_in_order_until_one_is_refused(served):
    look = request_bytes(served.port, b'{"text": "ROMEO"}')
    start = f"GET /api/start HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n\r\n".encode()
    answers = served.exchange(start + look + start)
    assert [answer.status for answer in answers] == [200, 200, 200]
    assert json.loads(answers[1].body)["tokens"] and json.loads(answers[0].body) == json.loads(answers[2].body)
    refused = request_bytes(served.port, b'{"text": "ROMEO"}', path="/nowhere")
    answers = served.exchange(start + refused + start + look)
    assert [answer.status for answer in answers] == [200, 404]  # what follows a refusal is not read as a request
    assert answers[1].headers["Connection"] == "close" and "not one of" in json.loads(answers[1].body)["error"]
    assert all(answer.headers["X-Content-Type-Options"] == "nosniff" for answer in answers)


def test_headers_that_trickle_in_are_told_408_once_the_request_has_taken_timeout(served, monkeypatch):
    """A header byte every 0.1 s never leaves a read waiting TIMEOUT; the request as a whole is late after TIMEOUT
    all the same, and told so, long before the trickle would end (the review held a thread past 70 s so)."""
    monkeypatch.setattr(lab_server, "TIMEOUT", 1)
    trickle = f"X-Slow: {'a' * 300}".encode()
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as connection:
        connection.sendall(f"GET /api/start HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n".encode())
        for sent, byte in enumerate(trickle, 1):
            if select.select([connection], [], [], 0.1)[0]:  # the lab answered
                break
            with contextlib.suppress(OSError):
                connection.sendall(bytes([byte]))
        received = connection.makefile("rb").read()
    answer, = answers_in(received)
    assert answer.status == 408 and "headers were not whole within 1 s" in json.loads(answer.body)["error"]
    assert sent < len(trickle), "the lab waited for the whole trickle"


def test_the_connections_answered_at_once_are_at_most_max_threads(play, monkeypatch):
    """Connections that stall each hold a thread until TIMEOUT: past MAX_THREADS of them the others wait in the
    kernel's backlog, and each is answered in its turn."""
    monkeypatch.setattr(lab_server, "MAX_THREADS", 2)
    monkeypatch.setattr(lab_server, "TIMEOUT", 0.5)
    handle, now, most, counting = lab_server.Handler.handle, [0], [0], threading.Lock()

    def counted(handler):  # each connection's handling, counted while it runs
        with counting:
            now[0] += 1
            most[0] = max(most[0], now[0])
        try:
            handle(handler)
        finally:
            with counting:
                now[0] -= 1
    monkeypatch.setattr(lab_server.Handler, "handle", counted)
    with serving(play, runs.home_of(play.folder)) as lab_served:
        connections = [socket.create_connection(("127.0.0.1", lab_served.port), timeout=30) for _ in range(6)]
        for connection in connections:
            connection.sendall(f"GET /api/start HTTP/1.1\r\nHost: 127.0.0.1:{lab_served.port}\r\n".encode())
        answers = []
        for connection in connections:
            answers += answers_in(connection.makefile("rb").read())
            connection.close()
    assert [answer.status for answer in answers] == [408] * 6 and most[0] <= 2


def test_fifty_connections_at_once_are_held_until_the_lab_answers_them_all(play):
    """Fifty clients connect before the lab accepts any: the kernel holds them (the listen backlog), and each is
    answered. A backlog of 5, socketserver's, leaves the connections past it unconnected."""
    server = lab_server.start(lab.api(lab_models.Models(play, runs.home_of(play.folder)), SETTINGS), "127.0.0.1", 0)
    connections = [socket.create_connection(("127.0.0.1", server.server_port), timeout=5) for _ in range(50)]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    try:
        for connection in connections:
            connection.sendall(request_bytes(server.server_port))
            connection.shutdown(socket.SHUT_WR)  # a client with nothing more to ask
        thread.start()
        answers = [connection.makefile("rb").read().split(b"\r\n", 1)[0] for connection in connections]
    finally:
        for connection in connections:
            connection.close()
        server.shutdown() if thread.is_alive() else None
        server.server_close()
    assert answers == [b"HTTP/1.1 200 OK"] * 50


FIELDS = ["text", "lr", "run", "temperature", "top_k", "top_p", "seed", "x"]
VALUES = [None, True, -1, 0, 0.5, 1e308, -1e-300, 2 ** 70, 10 ** 400, -10 ** 309, "", "ROMEO", "Z", "\x00", "NaN",
          "Infinity", "1e999", "../runs", [], {}, [1], {"a": 1}]
PATHS = ["/api/look", "/api/learn", "/api/continue", "/api/runs", "/api/start", "/", "/lab.js", "/x", "//api/look",
         "/api/look?x=1", "/api/../lab.py", "/%00", "*", "/" + "a" * 70_000]
GOOD_BODY = b'{"text": "ROMEO:\\nthe", "lr": 0.1}'


Sent = collections.namedtuple("Sent", "data requests pieces pause", defaults=(1, 1, 0.0))  # one connection's bytes


def malformed_request(rng, port):
    """What a connection sends (Sent): a request broken in one of thirteen random ways, or well formed with random
    fields, or several of them sent one after another (pipelined), or one trickled in pieces."""
    kind = rng.randrange(14)
    if kind == 12:  # pipelined: requests one after another, good and broken, before any answer
        sent = [good_request(rng, port) if rng.random() < 0.5 else broken_request(rng, port, rng.randrange(10))
                for _ in range(rng.randrange(2, 5))]
        return Sent(b"".join(sent), len(sent))
    if kind == 13:  # a slow trickle: a request sent in pieces, 0.05 s apart, some of them past the lab's TIMEOUT
        whole = good_request(rng, port) if rng.random() < 0.5 else broken_request(rng, port, rng.randrange(10))
        return Sent(whole, 1, rng.randrange(2, 9), 0.05)
    return Sent(broken_request(rng, port, kind))


def good_request(rng, port):
    return rng.choice([request_bytes(port, GOOD_BODY, rng.choice(["/api/look", "/api/learn"])),
                       f"GET {rng.choice(['/api/start', '/lab.css'])} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
                       .encode()])


def broken_request(rng, port, kind):
    """The bytes of a request broken in the way `kind` (0 to 11) says, or well formed with random fields (9)."""
    path = rng.choice(PATHS)
    if kind == 0:  # random bytes
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    if kind == 1:  # a random JSON object to a random path
        body = json.dumps({rng.choice(FIELDS): rng.choice(VALUES) for _ in range(rng.randrange(4))}).encode()
        return request_bytes(port, body, path)
    if kind == 2:  # a good request, cut short anywhere
        whole = request_bytes(port, GOOD_BODY, rng.choice(PATHS[:5]))
        return whole[:rng.randrange(1, len(whole))]
    if kind == 3:  # a good request with one byte changed
        whole = bytearray(request_bytes(port, GOOD_BODY, "/api/learn"))
        whole[rng.randrange(len(whole))] = rng.randrange(256)
        return bytes(whole)
    if kind == 4:  # a Content-Length huge, negative, not a number, or two of them
        length = rng.choice(["9" * rng.randrange(10, 6000), "-1", "1e3", "0x10", "", " ", "١٢", "17, 17", "17\r\n"
                             "Content-Length: 17", "17\r\nContent-Length: 99"])
        return request_bytes(port, GOOD_BODY).replace(b"Content-Length: 34", f"Content-Length: {length}".encode())
    if kind == 5:  # a security header twice, the good value first or second
        name, good, bad = rng.choice([("Host", f"127.0.0.1:{port}", "evil.example"), ("Content-Type",
                                      "application/json", "text/plain"), ("Origin", f"http://127.0.0.1:{port}",
                                      "http://evil.example")])
        first, second = (good, bad) if rng.random() < 0.5 else (bad, good)
        return request_bytes(port, GOOD_BODY, headers=f"{name}: {first}\r\n{name}: {second}\r\n")
    if kind == 6:  # arrays or objects nested deep in a field
        depth = rng.randrange(1, 3000)
        opening, closing = ("[" * depth, "]" * depth) if rng.random() < 0.5 else ('{"a":' * depth, "}" * depth)
        return request_bytes(port, f'{{"text": "RO", "lr": 0.1, "{rng.choice(FIELDS)}": {opening}1{closing}}}'
                             .encode(), rng.choice(PATHS[:3]))
    if kind == 7:  # a giant integer, or NaN and its kin as a number or a text
        number = rng.choice(["-" * rng.randrange(2) + "9" * rng.randrange(300, 5000), "NaN", "Infinity", "-Infinity",
                             "1e999", "-1e999", '"NaN"', '"1e308"', "1e-400", "-0.0"])
        return request_bytes(port, f'{{"text": "RO", "lr": 0.1, "{rng.choice(FIELDS[1:])}": {number}}}'.encode(),
                             rng.choice(PATHS[:3]))
    if kind == 8:  # a body shorter than its Content-Length (the connection's end tells the lab so)
        whole = request_bytes(port, GOOD_BODY, rng.choice(PATHS[:3]))
        return whole[:len(whole) - rng.randrange(1, len(GOOD_BODY) + 1)]
    if kind == 10:  # a string never closed, in a body near the lab's limit: a bound must not take the square of it
        body = b'{"text": "' + rng.choice([b'\\"', b"a", b"\\\\", b"["]) * (lab_server.MAX_BODY // 2)
        return request_bytes(port, body[:lab_server.MAX_BODY + rng.randrange(-64, 64)], rng.choice(PATHS[:3]))
    if kind == 11:  # HTTP/0.9, which has no status line: a version below 1.0, or a request line without one
        line = rng.choice([f"GET {path} HTTP/0.9", f"POST {path} HTTP/0.9", f"GET {path}", "GET / HTTP/00.9",
                           "GET / HTTP/0.10"])
        return f"{line}\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode("utf-8", "replace")
    method = rng.choice(["GET", "POST", "HEAD", "DELETE", "BREW", "get", "POST POST", "OPTIONS"])  # random headers
    headers = "".join(f"{rng.choice(['Host', 'Content-Length', 'Content-Type', 'Origin', 'Transfer-Encoding', 'X'])}: "
                      f"{rng.choice(['', '-1', 'a' * 9000, '0', 'chunked', 'application/json'])}\r\n"
                      for _ in range(rng.randrange(4)))
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}\r\n".encode("utf-8", "replace")


def fuzz(served, requests, seed):
    """Send requests malformed requests (seeded); {status: count} of the answers, None counting connections closed
    unanswered. Every answer must have its status line and the HEADERS, every refusal be one line of JSON and the
    last answer of its connection, saying so (Connection: close), and each request sent before it answered: an
    AssertionError names the request that got another."""
    rng, statuses = random.Random(seed), collections.Counter()
    for _ in range(requests):
        sent = malformed_request(rng, served.port)
        answers = served.exchange(sent.data, sent.pieces, sent.pause)
        statuses.update([answer.status for answer in answers] or [None])
        for i, answer in enumerate(answers):
            assert answer.status and answer.headers.get("X-Frame-Options") == "DENY", (sent.data[:200], answer)
            if answer.status != 200:
                assert i == len(answers) - 1 and answer.headers["Connection"] == "close", (sent.data[:200], answers)
            if answer.status != 200 and answer.body:  # an answer to HEAD has no body
                error = json.loads(answer.body)["error"]
                assert isinstance(error, str) and "\n" not in error, (sent.data[:200], answer)
        assert answers and (len(answers) >= sent.requests or answers[-1].status != 200), (sent, answers)
    return statuses


def test_hundreds_of_malformed_requests_are_each_refused_in_one_line_and_the_lab_answers_as_before(served, capfd,
                                                                                                  monkeypatch):
    _, first = served.post("/api/look", {"text": TEXT})
    monkeypatch.setattr(lab_server, "TIMEOUT", 0.25)  # so that some trickles are late
    statuses = fuzz(served, 300, seed=0)
    monkeypatch.undo()
    assert set(statuses) <= REFUSALS | {200}, statuses  # no 5xx, and no connection without an answer (None)
    assert statuses[200] and len(set(statuses) & REFUSALS) >= 8, statuses
    assert "Traceback" not in capfd.readouterr().err  # none of them met a bug
    assert served.post("/api/look", {"text": TEXT}) == (200, first)


def test_a_bug_in_the_backward_is_a_traceback_in_the_terminal_and_one_line_on_the_page(served, monkeypatch, capfd):
    def broken(dout, cache):
        raise ValueError("operands could not be broadcast together")  # a learner's edit gone wrong
    monkeypatch.setattr(transformer, "block_backward", broken)
    status, answer = served.post("/api/learn", {"text": TEXT, "lr": 0.1})
    err = capfd.readouterr().err
    assert status == 500 and "\n" not in answer["error"]
    assert answer["error"].startswith("a bug in the code: ValueError: operands could not be broadcast together")
    assert "Traceback" in err and "in broken" in err and "loss_and_grads" in err
    assert served.post("/api/look", {"text": TEXT})[0] == 200  # and the lab goes on


def test_two_tabs_at_once_get_the_same_answers_and_the_model_never_changes(served, play):
    before = transformer.flat_buffer(play.params).copy()
    requests = [("/api/look", {"text": TEXT}), ("/api/learn", {"text": TEXT, "lr": 1.0})] * 4
    answers = [None] * len(requests)

    def ask(i):
        answers[i] = served.post(*requests[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(answer == answers[i % 2] and answer[0] == 200 for i, answer in enumerate(answers))
    assert np.array_equal(transformer.flat_buffer(play.params), before)


def test_the_page_and_its_files_are_served_with_rules_against_framing_and_sniffing(served):
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    for path, kind in [("/", "text/html"), ("/lab.js", "text/javascript"), ("/lab.css", "text/css")]:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200 and response.getheader("Content-Type").startswith(kind)
        assert response.getheader("X-Frame-Options") == "DENY" and "default-src 'self'" in \
            response.getheader("Content-Security-Policy")
        elsewhere = body.replace(b'"http://www.w3.org/2000/svg"', b"")  # svg's namespace: a name, never fetched
        assert b"http://" not in elsewhere and b"https://" not in elsewhere and b"//cdn" not in elsewhere
        connection.close()
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)


def test_a_host_other_than_127_0_0_1_is_answered_by_its_own_name_only(play):
    with serving(play, runs.home_of(play.folder), host="127.0.0.2") as lab_served:
        connection = http.client.HTTPConnection("127.0.0.2", lab_served.port, timeout=30)
        for host, status in [(f"127.0.0.2:{lab_served.port}", 200), (f"evil.example:{lab_served.port}", 403)]:
            connection.request("GET", "/api/start", headers={"Host": host})
            response = connection.getresponse()
            response.read()
            assert response.status == status
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.2", lab_served.port, timeout=30)


# --- the runs ---------------------------------------------------------------------------------------------------------

def test_the_runs_are_listed_with_their_losses_as_curves(served, play):
    status, listing = served.request("GET", "/api/runs")
    assert status == 200 and listing["first"] == play.folder.name
    run = next(run for run in listing["runs"] if run["name"] == play.folder.name)
    assert run["state"] == "finished" and run["has_model"] and not run["damaged"]
    table = run_log.read_losses(play.folder)
    curves = run["curves"]
    assert len(curves["steps"]) <= lab.CURVE_POINTS < len(table)
    sizes = [len(bucket) for bucket in np.array_split(np.arange(len(table)), lab.CURVE_POINTS)]
    assert np.dot(sizes, curves["train"]) == pytest.approx(table["train_loss"].sum(), rel=1e-9)
    assert curves["val"] == table["val_loss"].dropna().tolist()


def save_again(model, scale):
    """Save model's weights, W_out scaled, over its files, as a run that validates a better model does."""
    params = pack({name: value * (scale if name == "W_out" else 1) for name, value in model.params.items()})
    recorded = {key: value for key, value in model.meta.items()
                if key not in ("format", "version", "model", "dtype", "weights_sha256", "tokenizer_sha256")}
    checkpoint.save_model(model.folder, params, model.cfg, model.tokenizer, recorded)


def test_a_run_chosen_saved_again_damaged_or_deleted_while_shown_is_said_on_the_page(play, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(play.folder, home / "runs" / "mine")
    first = checkpoint.load(home / "runs" / "mine")
    other = home / "runs" / "other"
    shutil.copytree(play.folder, other)
    with serving(first, home) as lab_served:
        look = lambda: lab_served.post("/api/look", {"text": TEXT, "run": "other"})  # noqa: E731
        status, answer = look()
        assert status == 200 and answer["model"]["name"] == "other" and answer["model"]["warning"] == ""
        save_again(checkpoint.load(other), 3.0)  # as a run still training saves a better model
        status, answer = look()
        assert status == 200 and "saved a new model" in answer["model"]["warning"]
        assert answer["tokens"][1]["loss"] != lab_served.post("/api/look", {"text": TEXT})[1]["tokens"][1]["loss"]
        (other / "model.npz").write_bytes(b"not weights")
        status, answer = look()
        assert status == 200 and "model.npz is damaged" in answer["model"]["warning"]
        assert "the model the lab read before" in answer["model"]["warning"]
        listed = {run["name"]: run for run in lab_served.request("GET", "/api/runs")[1]["runs"]}
        assert listed["other"]["state"] == "DAMAGED" and "model.npz" in listed["other"]["damaged"]
        shutil.rmtree(other)
        status, answer = look()
        assert status == 200 and "was deleted after the lab read it" in answer["model"]["warning"]
        assert set(run["name"] for run in lab_served.request("GET", "/api/runs")[1]["runs"]) == {"mine"}
        assert lab_served.post("/api/look", {"text": TEXT, "run": "never"})[0] == 404


@pytest.mark.parametrize("damage", ["[" * 200_000, '{"steps": 1' + "0" * 5000 + "}"],
                         ids=["nested 200,000 deep", "an integer of 5,001 digits"])
def test_a_run_whose_model_json_is_damaged_is_listed_as_damaged_and_the_others_as_before(play, tmp_path, damage):
    """The review's: such a model.json made /api/runs answer 500 at every poll of the page."""
    home = tmp_path / "home"
    shutil.copytree(play.folder, home / "runs" / "mine")
    shutil.copytree(play.folder, home / "runs" / "bad")
    (home / "runs" / "bad" / "model.json").write_text(damage)
    with serving(checkpoint.load(home / "runs" / "mine"), home) as lab_served:
        status, listing = lab_served.request("GET", "/api/runs")
        assert status == 200, listing
        listed = {run["name"]: run for run in listing["runs"]}
        assert listed["bad"]["state"] == "DAMAGED" and "model.json is damaged (not valid JSON" in listed["bad"]["damaged"]
        assert listed["mine"]["state"] == "finished"
        status, refused = lab_served.post("/api/look", {"text": TEXT, "run": "bad"})
        assert status == 400 and "model.json is damaged" in refused["error"]


# --- the command line ---------------------------------------------------------------------------------------------

def test_help_says_the_port_and_bad_options_are_one_line(capsys, play):
    with pytest.raises(SystemExit) as ended:
        lab.main(["--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert ended.value.code == 0 and "--open" in said and "--host" in said
    assert f"--port PORT the port the page is served on; 0: a free one (default: {lab.PORT})" in said
    with pytest.raises(InputError, match="every address"):
        lab.main(["--checkpoint", str(play.folder), "--host", "0.0.0.0"])
    with pytest.raises(InputError, match="--port must be"):
        lab.main(["--checkpoint", str(play.folder), "--port", "70000"])


@pytest.mark.parametrize("host", ["0.0.0.0", "0", "0.0", "0x0", "000.000.000.000", "", "::", "::0", "0::0",
                                  "::ffff:0.0.0.0"])
def test_every_spelling_of_every_address_is_refused_before_the_model_is_read(host):
    with pytest.raises(InputError, match="every address of this machine"):
        lab.main(["--checkpoint", "nothing-of-that-name", "--host", host])  # refused before the run is looked for


@pytest.mark.parametrize("host, address, loopback", [("127.0.0.2", "127.0.0.2", True), ("0x7f.1", "127.0.0.1", True),
                                                     ("localhost", "127.0.0.1", True), ("::1", "::1", True),
                                                     ("::ffff:127.0.0.1", "::ffff:127.0.0.1", True),
                                                     ("10.1.2.3", "10.1.2.3", False),
                                                     ("::ffff:10.1.2.3", "::ffff:a01:203", False)])
def test_a_host_is_resolved_before_it_is_called_this_machine_or_another(host, address, loopback):
    assert lab_server.listening_address(host) == (ipaddress.ip_address(address), loopback)


def test_a_lab_on_127_0_0_2_is_this_machines_alone():
    """lab.py warns of other machines only where server.loopback is False."""
    server = lab_server.start({}, "127.0.0.2", 0)
    server.server_close()
    assert server.loopback and server.url == f"http://127.0.0.2:{server.server_port}/"


def test_python_lab_py_prints_its_address_serves_and_stops_on_ctrl_c_in_one_line(play):
    process = subprocess.Popen([sys.executable, "lab.py", "--checkpoint", str(play.folder), "--port", "0"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        lines = [process.stdout.readline() for _ in range(2)]
        assert lines[0].startswith(f"model {play.folder.name}: ")
        assert lines[1].startswith("The lab is at http://127.0.0.1:")
        port = int(lines[1].split("http://127.0.0.1:")[1].split("/")[0])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/api/start")
        assert json.loads(connection.getresponse().read())["model"]["name"] == play.folder.name
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130 and err == "the lab stopped (Ctrl-C)\n", err


def test_a_checkpoint_that_is_not_there_is_a_persons_bad_input(tmp_path):
    with pytest.raises(InputError, match="no run in .* is named"):  # run_script: one line and exit 2
        lab.main(["--checkpoint", "nothing-of-that-name", "--port", "0"])


# --- the page, in Chromium --------------------------------------------------------------------------------------------

def write_small_gpt2(folder, rng):
    """A GPT-2 folder as the hub holds one, small: 2 blocks of 4 heads, random weights, and a vocabulary of the 256
    byte stand-ins, a few merges and <|endoftext|>."""
    from safetensors.numpy import save_file
    C, T, L = 16, 32, 2
    stand_ins = [char for _, char in byte_stand_ins()]
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("o", "n"), ("Ġ", "m")]
    vocab = {token: i for i, token in enumerate(stand_ins + [a + b for a, b in merges] + [END_OF_TEXT])}
    normal = lambda *shape: rng.normal(0, 0.3, shape).astype(np.float32)  # noqa: E731
    tensors = {"wte.weight": normal(len(vocab), C), "wpe.weight": normal(T, C), "ln_f.weight": 1 + normal(C),
               "ln_f.bias": normal(C)}
    for layer in range(L):
        tensors.update({f"h.{layer}.{name}": normal(*shape) for name, shape in [
            ("ln_1.weight", (C,)), ("ln_1.bias", (C,)), ("attn.c_attn.weight", (C, 3 * C)),
            ("attn.c_attn.bias", (3 * C,)), ("attn.c_proj.weight", (C, C)), ("attn.c_proj.bias", (C,)),
            ("ln_2.weight", (C,)), ("ln_2.bias", (C,)),
            ("mlp.c_fc.weight", (C, 4 * C)), ("mlp.c_fc.bias", (4 * C,)), ("mlp.c_proj.weight", (4 * C, C)),
            ("mlp.c_proj.bias", (C,))]})
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = {"model_type": "gpt2", "vocab_size": len(vocab), "n_positions": T, "n_embd": C, "n_head": 4, "n_layer": L,
              "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def small_gpt2(tmp_path_factory):
    pytest.importorskip("safetensors", reason='the gpt2 extra is not installed: pip install -e ".[gpt2]"')
    pytest.importorskip("regex", reason='the gpt2 extra is not installed: pip install -e ".[gpt2]"')
    return checkpoint.load(write_small_gpt2(tmp_path_factory.mktemp("gpt2") / "small", np.random.default_rng(0)))


DRAWN = """() => ({
    tokens: document.querySelectorAll("#tokens .token").length,
    maps: [...document.querySelectorAll("#attention canvas")].filter(c => c.width > 0 && c.height > 0).length,
    inked: [...document.querySelectorAll("#attention canvas")].every(c => {  // each map has blue in it
        const pixels = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        return pixels.some((value, i) => i % 4 === 2 && value > pixels[i - 2] + 20);
    }),
    next: document.querySelectorAll("#next .bar").length,
    lens: document.querySelectorAll("#layers tr").length,
    grads: document.querySelectorAll("#grads .bar").length,
    inputs: document.querySelectorAll("#input-grads .token").length,
    error: document.getElementById("error").hidden ? "" : document.getElementById("error").textContent,
})"""


@pytest.mark.parametrize("which", ["the tiny play", "a small GPT-2"])
def test_the_page_draws_every_view_for_a_typed_text(which, request, browser, tmp_path):
    model = request.getfixturevalue("play") if which == "the tiny play" else request.getfixturevalue("small_gpt2")
    text = TEXT if which == "the tiny play" else "The moon is high tonight, the moon on the hill."
    T = len(ids_of(model, text))
    with serving(model, runs.listing_home(model.folder, tmp_path)) as lab_served:
        origin = f"http://127.0.0.1:{lab_served.port}"
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors, elsewhere = [], []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("request", lambda sent: None if sent.url.startswith(origin + "/") or sent.url.startswith("data:")
                else elsewhere.append(sent.url))
        try:
            page.goto(origin + "/", wait_until="load")
            page.wait_for_selector("body[data-drawn]", state="attached", timeout=30_000)  # it opens with a text, drawn
            opened = lab.first_text(model)
            assert page.input_value("#text") == opened["text"] and page.input_value("#lr") == str(lab.FIRST_LR)
            assert page.locator("#tokens .token").count() == len(ids_of(model, opened["text"]))
            assert opened["text_from"] in page.text_content("#text-from")
            assert "plain gradient step" in page.text_content("#step")
            drawn_before = page.get_attribute("body", "data-drawn")
            page.fill("#text", text)  # as typed: the page looks and learns on its input event
            page.wait_for_selector(f"body:not([data-drawn='{drawn_before}'])", state="attached", timeout=30_000)
            assert page.locator("#text-from").is_hidden()
            drawn = page.evaluate(DRAWN)
            assert drawn == {"tokens": T, "maps": model.cfg.num_layers * model.cfg.num_heads, "inked": True,
                             "next": min(10, model.cfg.vocab_size), "lens": model.cfg.num_layers + 2,
                             "grads": len(model.params), "inputs": T - 1, "error": ""}
            box = page.locator("#attention canvas").last.bounding_box()  # point at the map's last row
            page.mouse.move(box["x"] + 2, box["y"] + box["height"] - 1)
            assert page.locator("#reads .token").count() == T  # the last position reads every position
            drawn_before = page.get_attribute("body", "data-drawn")
            page.click("#continue")  # one token drawn, and every view drawn again for the longer text
            page.wait_for_selector(f"body:not([data-drawn='{drawn_before}'])", state="attached", timeout=30_000)
            assert page.input_value("#text").startswith(text) and len(page.input_value("#text")) > len(text)
            if which == "the tiny play":  # a step far too long: its first-order figure below 0, said so
                drawn_before = page.get_attribute("body", "data-drawn")
                page.fill("#lr", "10")
                page.wait_for_selector(f"body:not([data-drawn='{drawn_before}'])", state="attached", timeout=30_000)
                assert "below 0, which no loss can be" in page.text_content("#step")
            assert not errors and not elsewhere, (errors, elsewhere)
        finally:
            page.close()


def test_the_runs_listed_beside_a_gpt2_folder_or_a_moved_run_are_config_pys_as_in_talk(small_gpt2, play, tmp_path):
    """lab.py lists the runs of the model's own home, and of config.py's home where the model has none (a GPT-2
    folder, a run copied out of runs/): the folder talk.py's /models lists, by the same function."""
    assert runs.listing_home(play.folder, tmp_path) == runs.home_of(play.folder)
    assert runs.listing_home(small_gpt2.folder, tmp_path) == tmp_path
    moved = tmp_path / "moved"
    shutil.copytree(play.folder, moved)
    assert runs.listing_home(moved, "checkpoints") == Path("checkpoints")
