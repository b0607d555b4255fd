"""The pages' interactive examples: their data is what the project's code computes now, and a learner
who drives their controls in a real browser sees, for each choice, what NumPy computes for it.

The data (docs/widgets/*.json) is written by docs/make_widgets.py; the browser tests use the
`site` and `browser` fixtures of conftest.py and skip without mkdocs, Playwright or Chromium,
except under CI.
"""

import importlib.util
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import config
from engineering.errors import run_script
from transformer import Sampling, filtered_probs
from test_examples_layers import EPS, identity_attention_params, layernorm_example
from test_examples_model import residual_block
from test_transformer import DX0, POS_EMB, TOK_EMB
from transformer import (attention_backward, attention_forward, block_backward, block_forward, block_params,
                         cross_entropy_backward, cross_entropy_forward, embed_backward, embed_forward, gelu_backward,
                         gelu_forward, init_params, layernorm_backward, layernorm_forward, pack, zeros_like)

REPO = Path(__file__).resolve().parent.parent
WIDGETS = REPO / "docs" / "widgets"
PAGES = {"embeddings": "01-embeddings", "layernorm": "02-layernorm", "attention": "03-attention", "mlp": "04-mlp",
         "block": "05-block", "output": "06-output", "sampling": "10-sampling"}


@pytest.fixture(scope="module")
def make_widgets():
    spec = importlib.util.spec_from_file_location("make_widgets", REPO / "docs" / "make_widgets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def committed(name):
    return json.loads((WIDGETS / f"{name}.json").read_text(encoding="utf-8"))


def differences(stored, computed, where=""):
    """Where two JSON values differ by more than the rounding of make_widgets.number: a list of paths."""
    if isinstance(stored, dict) and isinstance(computed, dict):
        if stored.keys() != computed.keys():
            return [f"{where}: keys {sorted(stored.keys() ^ computed.keys())}"]
        return [d for k in stored for d in differences(stored[k], computed[k], f"{where}/{k}")]
    if isinstance(stored, list) and isinstance(computed, list):
        if len(stored) != len(computed):
            return [f"{where}: {len(stored)} items, {len(computed)} computed"]
        return [d for i, (a, b) in enumerate(zip(stored, computed)) for d in differences(a, b, f"{where}[{i}]")]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (stored, computed))
    if numbers and math.isclose(stored, computed, rel_tol=1e-6, abs_tol=2e-6):  # a last digit rounded the other way
        return []
    return [] if stored == computed else [f"{where}: {stored!r} stored, {computed!r} computed"]


def test_the_committed_data_is_what_make_widgets_computes_now(make_widgets):
    built = make_widgets.build(make_widgets.stored_source())
    assert sorted(p.stem for p in WIDGETS.glob("*.json")) == sorted(built), "a widget's file is missing or left over"
    for name, data in built.items():
        found = differences(committed(name), json.loads(make_widgets.dumps(data)))
        assert not found, f"docs/widgets/{name}.json is stale (python docs/make_widgets.py): {found[:5]}"


def test_the_comparison_catches_a_changed_number(make_widgets):
    data = json.loads(make_widgets.dumps(make_widgets.build(make_widgets.stored_source())["output"]))
    changed = json.loads(json.dumps(data))
    changed["tables"]["choice"]["cases"]["2|1|1"]["loss"] += 1e-4
    assert differences(data, changed) == ["/tables/choice/cases/2|1|1/loss: 0.407606 stored, 0.407706 computed"]


def test_each_page_holds_its_widget():
    for name, page in PAGES.items():
        text = (REPO / "docs" / f"{page}.md").read_text(encoding="utf-8")
        assert text.count(f'<div class="widget" data-widget="{name}">') == 1, page


def number(value):
    return float(value) if isinstance(value, str) else value  # "inf", "-inf" and "nan" as floats


def array(value):
    return np.vectorize(number, otypes=[float])(np.array(value, dtype=object))


def case(name, *choice, table="choice"):
    return committed(name)["tables"][table]["cases"]["|".join(map(str, choice))]


# --- the stored values against direct calls of the project's functions, for a few choices -------

def embedding_params():
    return pack({"tok_emb": np.array(TOK_EMB), "pos_emb": np.array(POS_EMB)})


def embedding_expected(ids):
    params, ids = embedding_params(), np.array(ids)
    grads = zeros_like(params)
    embed_backward(np.array(DX0)[: len(ids)], ids, grads)
    return {"X0": embed_forward(params, ids), "grad_tok": grads["tok_emb"], "grad_pos": grads["pos_emb"]}


@pytest.mark.parametrize("ids", [(2, 0, 2), (1, 1), (3,), (0, 1, 2)])
def test_embeddings_data_is_embed_forward_and_backward(ids):
    stored = case("embeddings", len(ids), *ids, *["-"] * (3 - len(ids)))
    for field, value in embedding_expected(ids).items():
        assert np.allclose(array(stored[field]), value, rtol=0, atol=1e-6), field
    last = {v: t for t, v in enumerate(ids)}  # the += keeps the last row of dX0 of each id
    assert all(np.array_equal(stored["wrong"][v], DX0[t]) for v, t in last.items())


def test_embeddings_data_shows_the_pages_repeated_id():
    stored = case("embeddings", 3, 2, 0, 2)
    assert stored["grad_tok"][2] == [3, 2] and stored["wrong"][2] == [2, 2]  # dX0[0] + dX0[2], and dX0[2] alone
    assert stored["note"] == ("Id 2 is at positions 0 and 2, so row 2 of the token gradient is dX0[0] + dX0[2]; "
                              "the += keeps only dX0[2].")
    assert case("embeddings", 2, 1, 3, "-")["note"] == "No id repeats, so np.add.at and the += agree."


def layernorm_expected(row, move, gain_choice):
    x, gain, shift = layernorm_example()
    x = (x[row: row + 1] if row < 2 else np.full((1, 4), 5.0)).copy()
    x[0, 0] += move
    gain = gain if gain_choice == "page" else np.ones(4)
    dout = np.eye(4)[[0, 1, 0][row]][None]
    out, cache = layernorm_forward(x, gain, shift, EPS)
    dx, dgain, dshift = layernorm_backward(dout, cache)
    return {"x": x[0], "out": out[0], "dx": dx[0], "dgain": dgain, "dshift": dshift, "xhat": cache[0][0],
            "mean": x.mean(), "variance": x.var()}


@pytest.mark.parametrize("choice", [(0, 0, "page"), (1, 0, "page"), (0, 5, "ones"), (2, -3, "page")])
def test_layernorm_data_is_layernorm_forward_and_backward(choice):
    stored = case("layernorm", *choice)
    for field, value in layernorm_expected(*choice).items():
        assert np.allclose(array(stored[field]), value, rtol=0, atol=2e-6), field


def test_layernorm_data_is_the_pages_example_and_eps_keeps_the_constant_row():
    stored = case("layernorm", 0, 0, "page")
    assert np.allclose(stored["dx"], [1 / 54, -1 / 27, -1 / 27, 1 / 18], atol=1e-5)  # the page's fractions
    constant = case("layernorm", 2, 0, "page")
    assert constant["out"] == [0, 0, 1, -1] and constant["naive_rstd"] == "inf"
    assert constant["naive_out"][0] == "nan"


def attention_expected(head, t, scale):
    x = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    p = identity_attention_params()
    p["Wq"] = scale * p["Wq"]
    out, cache = attention_forward(x, p, 2)
    attn = cache[4][0, head, t]
    _, grads = attention_backward(np.ones_like(out), cache)
    return {"attn": attn, "out": out[0, t, head], "dbq": grads["bq"][head]}


@pytest.mark.parametrize("choice", [(0, 2, 1), (1, 1, 1), (1, 2, 5), (0, 0, 0.5), (1, 2, 1000)])
def test_attention_data_is_attention_forward_and_backward(choice):
    stored = case("attention", *choice)
    for field, value in attention_expected(*choice).items():
        assert np.allclose(array(stored[field]), value, rtol=0, atol=2e-6), field
    # dscores is attention_backward's own: the bias gradient of the queries, sum_t dscores_t k, is the backward's
    dbq = sum(np.dot(case("attention", choice[0], t, choice[2])["dscores"], stored["k"]) for t in range(3))
    assert np.isclose(dbq, stored["dbq"], rtol=0, atol=1e-5)
    assert np.isclose(sum(stored["dscores"]), 0, atol=1e-5)  # a softmax input's gradient sums to 0


def test_attention_data_shows_the_naive_softmax_overflowing():
    assert case("attention", 0, 2, 1)["naive"] == case("attention", 0, 2, 1)["attn"]
    overflowing = case("attention", 0, 2, 1000)
    assert overflowing["naive"] == ["nan", 0, "nan"] and overflowing["attn"] == [0.5, 0, 0.5]


@pytest.mark.parametrize("x", [-4.0, -1.0, 0.0, 0.75, 1.0, 3.25])
def test_mlp_data_is_gelu_forward_and_backward(x):
    stored = case("mlp", f"{x:g}")
    y, cache = gelu_forward(np.array([x]))
    assert np.isclose(stored["y"], y[0], rtol=0, atol=2e-6)
    assert np.isclose(stored["dy_dx"], gelu_backward(np.ones(1), cache)[0], rtol=0, atol=2e-6)
    assert np.isclose(stored["through_x"] + stored["through_u"], stored["dy_dx"], rtol=0, atol=3e-6)
    assert np.isclose(stored["through_u"], 0.5 * x * (1 - stored["tanh_u"] ** 2) * stored["du_dx"], rtol=0, atol=1e-5)
    assert np.isclose(np.tanh(stored["u"]), stored["tanh_u"], rtol=0, atol=2e-6)


def test_mlp_data_at_one_is_the_pages_example():
    stored = case("mlp", "1")
    assert round(stored["y"], 4) == 0.8412 and round(stored["dy_dx"], 4) == 1.0830
    assert round(stored["mlp_out"], 4) == 1.1824 and round(stored["mlp_dx"], 4) == 1.1659


def test_the_gelu_widgets_text_says_what_its_own_numbers_show():
    cases = list(committed("mlp")["tables"]["choice"]["cases"].values())
    text, xs = committed("mlp")["try"], [c["x"] for c in cases]
    dy = np.array([c["dy_dx"] for c in cases])
    lowest = re.search(r"lowest at x = (\S+) of the slider's steps", text)
    assert float(lowest[1]) == xs[int(np.argmin([c["y"] for c in cases]))]
    turn = re.search(r"dy/dx changes sign between x = (\S+) and (\S+),", text)
    left, right = xs.index(float(turn[1])), xs.index(float(turn[2]))
    assert right == left + 1 and dy[left] < 0 <= dy[right] and (dy[:left] <= 0).all() and (dy[right:] >= 0).all()
    off = re.search(r"is off most at x = (\S+) and (\S+);", text)
    gaps = {x: abs(c["dy_dx"] - c["wrong"]) for x, c in zip(xs, cases)}
    assert {float(off[1]), float(off[2])} == {x for x, gap in gaps.items() if gap > max(gaps.values()) - 1e-6}
    above = re.search(r"above 1 for every x from (\S+) on, highest at x = (\S+) \((\S+)\)", text)
    start = xs.index(float(above[1]))
    assert (dy[start:] > 1).all() and dy[start - 1] <= 1  # the issue: it does not fall back under 1 after 3
    assert float(above[2]) == xs[int(np.argmax(dy))] and float(above[3]) == round(dy.max(), 3)


def test_the_attention_widgets_text_says_what_its_own_maps_show():
    maps, text = committed("attention")["tables"]["maps"]["cases"], committed("attention")["try"]
    top = max(float(k.split("|")[1]) for k in maps)
    weights = lambda h, t, s: np.array(maps[f"{h}|{s:g}"]["weights"][t][: t + 1])  # noqa: E731
    scales = sorted({float(k.split("|")[1]) for k in maps})
    named = lambda clause: [(int(h), int(t)) for h, t in re.findall(r"head (\d)'s row (\d)", clause)]  # noqa: E731
    single, tied, fixed = (re.search(pattern, text)[0] for pattern in (
        r"one largest score sharpens onto it \([^)]*\)", r"largest scores tie ends split between them \([^)]*\)",
        r"keeps its weights at every s \([^)]*\)"))
    assert f"at s = {top:g}" in single
    for h, t in named(single):  # all its weight on one key at the largest scale
        assert weights(h, t, top).max() > 0.999
    for h, t in named(tied):  # two keys share it evenly, however large the scale
        assert np.sort(weights(h, t, top))[-2:].tolist() == [0.5, 0.5]
    for h, t in named(fixed):  # the issue: head 0's row 1 stays [0.5, 0.5], it sharpens onto nothing
        assert all(np.allclose(weights(h, t, s), weights(h, t, scales[0])) for s in scales)
    assert len(named(single) + named(tied) + named(fixed)) == 4, "every row but row 0 of each head, named once"
    nan_from = float(re.search(r"From s = (\S+) the naive softmax", text)[1])
    cases = committed("attention")["tables"]["choice"]["cases"]
    assert all(("nan" in c["naive"]) == (float(k.split("|")[2]) >= nan_from) for k, c in cases.items()
               if k.split("|")[1] == "2")


def block_expected(mlp, reads):
    cfg, p = residual_block()
    if mlp == "on":
        drawn = block_params(init_params(cfg, np.random.default_rng(0)), 0)
        p["W1"][...], p["W2"][...] = drawn["W1"], drawn["W2"]
    x = np.array([[[1.0, 2.0, 3.0], [3.0, 1.0, 2.0], [0.0, 2.0, 0.0]]])
    dout = np.zeros_like(x)
    dout[0, reads, 0] = 1.0
    out, cache = block_forward(x, p, cfg)
    dx, _ = block_backward(dout, cache)
    return {"out": out[0], "dx": dx[0]}


@pytest.mark.parametrize("choice", [("off", 0), ("off", 2), ("on", 1), ("on", 2)])
def test_block_data_is_block_forward_and_backward(choice):
    stored = case("block", *choice)
    for field, value in block_expected(*choice).items():
        assert np.allclose(array(stored[field]), value, rtol=0, atol=2e-6), field
    assert np.allclose(array(stored["x_mid"]) + array(stored["fed"]), stored["out"], atol=3e-6)
    assert np.allclose(array(stored["dx_mid"]) + array(stored["attn_branch"]), stored["dx"], atol=3e-6)
    assert not np.any(array(stored["dx"])[choice[1] + 1:])  # a position after the one the loss reads: no gradient


def test_block_data_is_the_pages_example_at_position_0():
    stored = case("block", "off", 0)
    assert np.allclose(stored["out"][0], [-0.2247, 2.0, 4.2247], atol=5e-5)
    assert np.allclose(stored["dx"][0], [1.2041, -0.4082, 0.2041], atol=5e-5)


@pytest.mark.parametrize("choice", [(2, 1, 1), (0, 1, 2), (1, 10, 1), (2, 1000, 2)])
def test_output_data_is_cross_entropy_forward_and_backward(choice):
    target, scale, rows = choice
    logits = np.tile(scale * np.array([1.0, 2.0, 3.0]), (rows, 1))
    loss, cache = cross_entropy_forward(logits, np.full(rows, target))
    stored = case("output", *choice)
    assert np.isclose(stored["loss"], loss, rtol=1e-6, atol=2e-6)
    assert np.allclose(array(stored["dlogits"]), cross_entropy_backward(cache)[0], rtol=0, atol=2e-6)


def test_output_data_shows_the_naive_softmax_overflowing():
    assert case("output", 2, 1, 1)["naive_loss"] == case("output", 2, 1, 1)["loss"] == 0.407606
    overflowing = case("output", 2, 1000, 1)
    assert overflowing["naive_exps"] == ["inf"] * 3 and overflowing["naive_loss"] == "nan"
    assert overflowing["loss"] == 0 and overflowing["dlogits"] == [0, 0, 0]


def sampling_source():
    return committed("sampling")["source"]


@pytest.mark.parametrize("choice", [(0.8, 0, 0.9), (1, 0, 1), (0, 0, 1), (2, 5, 1), (1.5, 20, 0.5), (0.25, 2, 0.95)])
def test_sampling_data_is_filtered_probs(choice):
    source = sampling_source()
    probs = filtered_probs(np.array(source["logits"]), Sampling(*choice))
    stored = case("sampling", *choice)
    assert np.allclose(stored["filtered"], probs[source["ids"]], rtol=0, atol=2e-6)
    assert stored["kept"] == np.count_nonzero(probs)
    assert np.isclose(stored["filtered_rest"], 1 - probs[source["ids"]].sum(), rtol=0, atol=2e-6)


def test_sampling_data_names_its_checkpoint_and_shows_the_naive_form_overflowing():
    source = sampling_source()
    assert source["prompt"] == "Mira could not find her"
    for key in ("commit", "run", "steps", "model.npz sha256", "corpus sha256"):
        assert source["provenance"][key], key
    assert source["ids"][:1] == [int(np.argmax(source["logits"]))]
    assert "nan" in case("sampling", 0.01, table="temperature")["naive"]


def test_the_sampling_widget_reads_the_model_of_the_pages_figures():
    figures = json.loads((REPO / "docs" / "figures.json").read_text(encoding="utf-8"))["provenance"]
    assert sampling_source()["provenance"]["model.npz sha256"] == figures["model.npz sha256"], (
        "docs/widgets/sampling.json and docs/figures.json read different models: run python docs/make_widgets.py "
        "--checkpoint FOLDER with the folder docs/make_figures.py read")


def test_make_widgets_without_its_stored_logits_is_one_line_and_exit_2(make_widgets, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(make_widgets, "WIDGETS", tmp_path)
    with pytest.raises(SystemExit) as exit_status:
        run_script(lambda: make_widgets.main([]))
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--checkpoint FOLDER" in err
    with pytest.raises(SystemExit) as exit_status:
        run_script(lambda: make_widgets.main(["--checkpoint", str(tmp_path / "no-such-model")]))
    assert exit_status.value.code == 2 and capsys.readouterr().err.count("\n") == 1
    assert not list(tmp_path.iterdir()), "nothing is written"


# --- in the browser: each widget driven through its controls --------------------------------------

@pytest.fixture(scope="module")
def widget_page(open_site_page):
    """widget_page(name) -> (visit, the widget's locator): each widget's page opened once for the tests that
    drive it (each test sets every control it reads, so the order of the tests does not matter)."""
    opened = {}

    def open_widget(name):
        if name not in opened:
            visit = open_site_page(f"{PAGES[name]}/")
            widget = visit.page.locator(f'div.widget[data-widget="{name}"]')
            visit.page.wait_for_function(f"""() => document.querySelector('div.widget[data-widget="{name}"]')
                                             .dataset.ready !== "loading" """)
            assert widget.get_attribute("data-ready") == "true", widget.inner_text()
            opened[name] = visit, widget
        return opened[name]
    return open_widget


def open_widget(widget_page, name):
    return widget_page(name)


def choose(widget, name, control, value):
    """Set a control as a learner would: a select's option, or a slider moved to the option's place."""
    spec = next(c for c in committed(name)["controls"] if c["name"] == control)
    index = [option[0] for option in spec["options"]].index(str(value))
    input_ = widget.locator(f'[data-control="{control}"]')
    if spec["slider"]:
        input_.fill(str(index))  # the slider dragged to its place: its value set, and its input event fired
    else:
        input_.select_option(str(value))


SHOWN = """(figure) => [...figure.querySelectorAll("table tr")].filter(tr => tr.querySelector("td"))
    .map(tr => [...tr.querySelectorAll("td")].map(td => td.textContent))"""


def shown_texts(widget, field):
    return np.array(widget.locator(f'figure[data-field="{field}"]').evaluate(SHOWN)).squeeze()


def shown(widget, field):
    """The numbers a panel shows, read back from its text: 4 decimals, or 4 significant digits and an exponent."""
    return np.vectorize(float, otypes=[float])(shown_texts(widget, field))


def shown_column(widget, column):
    return np.array([float(t) for t in widget.locator(f'td[data-column="{column}"]').all_text_contents()])


def assert_shows(widget, field, expected):
    texts = shown_texts(widget, field)
    values, expected = shown(widget, field), np.asarray(expected, dtype=float)
    expected = expected.reshape(texts.shape) if expected.size == texts.size else np.broadcast_to(expected, texts.shape)
    tolerance = 5.1e-5 + np.where(np.char.find(texts.astype(str), "e") >= 0, 5e-4 * np.abs(expected), 0)
    same = np.isclose(values, expected, rtol=0, atol=tolerance) | (np.isnan(values) & np.isnan(expected))
    same |= values == expected  # inf
    assert same.all(), f"{field}: the page shows {texts.tolist()}, NumPy computes {expected.tolist()}"


def test_the_embeddings_widget_shows_embed_forward_and_backward(widget_page):
    _, widget = open_widget(widget_page, "embeddings")
    for ids in [(2, 0, 2), (1, 1), (3,), (0, 3, 0)]:
        choose(widget, "embeddings", "T", len(ids))
        for t, v in enumerate(ids):
            choose(widget, "embeddings", f"id{t}", v)
        for field, value in embedding_expected(ids).items():
            assert_shows(widget, field, value)
        wrong = np.zeros((4, 2))
        wrong[list(ids)] += np.array(DX0)[: len(ids)]
        assert_shows(widget, "wrong", wrong)
        assert widget.locator('[data-control="id2"]').is_disabled() == (len(ids) < 3)  # ids[2] counts from T = 3


def test_the_layernorm_widget_shows_layernorm_forward_and_backward(widget_page):
    _, widget = open_widget(widget_page, "layernorm")
    for row, move, gain in [(0, 0, "page"), (1, 3, "page"), (1, -6, "ones"), (2, 0, "ones")]:
        choose(widget, "layernorm", "row", row)
        choose(widget, "layernorm", "move", move)
        choose(widget, "layernorm", "gain", gain)
        for field, value in layernorm_expected(row, move, gain).items():
            assert_shows(widget, field, value)
    assert widget.locator('figure[data-field="naive_out"] td.w-nonfinite').count() == 4  # eps = 0: nan everywhere


def choose_attention(widget, head, t, scale):
    """Set the attention widget's three controls: the head, the query position t, the scale of Wq."""
    for control, value in (("head", head), ("t", t), ("scale", scale)):
        choose(widget, "attention", control, value)


def test_the_attention_widget_shows_attention_forward_and_backward(widget_page):
    _, widget = open_widget(widget_page, "attention")
    for head, t, scale in [(0, 2, 1), (1, 1, 0), (1, 2, 10), (0, 2, 1000)]:
        choose_attention(widget, head, t, scale)
        for field, value in attention_expected(head, t, scale).items():
            assert_shows(widget, field, value)
    assert_shows(widget, "naive", [np.nan, 0, np.nan])  # exp(1000) / exp(1000) = inf / inf


def test_the_mlp_widget_shows_gelu_forward_and_backward(widget_page):
    _, widget = open_widget(widget_page, "mlp")
    for x in (1.0, -0.75, 2.5, -4.0):
        choose(widget, "mlp", "x", f"{x:g}")
        y, cache = gelu_forward(np.array([x]))
        assert_shows(widget, "y", y)
        assert_shows(widget, "dy_dx", gelu_backward(np.ones(1), cache))
        assert_shows(widget, "wrong", 0.5 * (1 + cache[1]))


def test_the_block_widget_shows_block_forward_and_backward(widget_page):
    _, widget = open_widget(widget_page, "block")
    for mlp, reads in [("off", 0), ("on", 2), ("on", 0), ("off", 1)]:
        choose(widget, "block", "mlp", mlp)
        choose(widget, "block", "reads", reads)
        for field, value in block_expected(mlp, reads).items():
            assert_shows(widget, field, value)
        marked = widget.locator('figure[data-field="dx"] tr.w-marked').evaluate("tr => tr.rowIndex")
        assert marked == reads


def test_the_output_widget_shows_cross_entropy_forward_and_backward(widget_page):
    _, widget = open_widget(widget_page, "output")
    for target, scale, rows in [(2, 1, 1), (0, 2, 2), (1, 0.5, 1), (2, 1000, 1)]:
        choose(widget, "output", "target", target)
        choose(widget, "output", "scale", scale)
        choose(widget, "output", "rows", rows)
        logits = np.tile(scale * np.array([1.0, 2.0, 3.0]), (rows, 1))
        loss, cache = cross_entropy_forward(logits, np.full(rows, target))
        assert_shows(widget, "probs", cache[0][0])
        assert_shows(widget, "loss", loss)
        assert_shows(widget, "dlogits", cross_entropy_backward(cache)[0])
    assert_shows(widget, "naive_loss", np.nan)


def test_the_sampling_widget_shows_filtered_probs(widget_page):
    _, widget = open_widget(widget_page, "sampling")
    source = sampling_source()
    logits, ids = np.array(source["logits"]), source["ids"]
    for temperature, top_k, top_p in [(0.8, 0, 0.9), (1, 0, 1), (2, 3, 1), (0.5, 10, 0.5), (0, 0, 1)]:
        choose(widget, "sampling", "temperature", temperature)
        choose(widget, "sampling", "top_k", top_k)
        choose(widget, "sampling", "top_p", top_p)
        probs = filtered_probs(logits, Sampling(temperature, top_k, top_p))
        assert np.allclose(shown_column(widget, "filtered"), probs[ids], rtol=0, atol=5.1e-5)
        assert np.allclose(shown_column(widget, "before"), filtered_probs(logits, Sampling(temperature, 0, 1))[ids],
                           rtol=0, atol=5.1e-5)
        assert shown(widget, "kept") == np.count_nonzero(probs)
    assert widget.locator('td[data-column="texts"]').all_text_contents() == [repr(t) for t in source["texts"]]


def test_a_widget_whose_data_is_missing_says_so(browser, site):
    page = browser.new_page()
    try:
        page.route("**/widgets/embeddings.json", lambda route: route.fulfill(status=404, body="not found"))
        page.goto(site.url("01-embeddings/"), wait_until="load")
        message = page.locator('div.widget[data-widget="embeddings"] .widget-missing')
        message.wait_for(state="visible")
        assert "could not load its numbers from widgets/embeddings.json" in message.inner_text()
        assert "python docs/make_widgets.py" in message.inner_text()
    finally:
        page.close()


# --- what a learner meets first, and on a narrow screen ------------------------------------------

def test_each_widget_opens_with_what_to_try_and_folds_where_its_numbers_come_from(site_pages):
    for name in PAGES:
        spec = committed(name)
        [shown] = [w for w in site_pages[f"{PAGES[name]}/", 1280]["widgets"] if w["name"] == name]
        assert shown["ready"] == "true", name
        assert shown["first"] == [["w-title", spec["title"]], ["w-try", spec["try"]]], name
        assert "notice" in spec["try"].lower() or "watch" in spec["try"].lower(), f"{name}: say what to notice"
        source = shown["source"]
        assert source and source["last"] and not source["open"], f"{name}: fold its provenance, last"
        assert source["summary"] == "Where these numbers come from"
        assert source["caption"] == spec["caption"]
        assert "test_" in spec["caption"] or "sha256" in spec["caption"], f"{name}: the provenance moved"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_widgets_page_fits_a_narrow_screen(site_pages, name):
    width = site_pages[f"{PAGES[name]}/", 400]["width"]
    assert width <= 400 + 2, f"{PAGES[name]} is {width} px wide on a 400 px screen"


def test_the_attention_widget_draws_the_heads_map_of_weights(widget_page):
    _, widget = open_widget(widget_page, "attention")
    for head, t, scale in [(0, 2, 1), (1, 1, 0), (1, 0, 10), (0, 2, 1000)]:
        choose_attention(widget, head, t, scale)
        x = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
        p = identity_attention_params()
        p["Wq"] = scale * p["Wq"]
        _, cache = attention_forward(x, p, 2)
        assert_shows(widget, "weights", cache[4][0, head])  # the whole T x T map of this head
        heatmap = widget.locator('figure[data-field="weights"]')
        assert heatmap.locator("tr.w-marked").evaluate("tr => tr.rowIndex") == t + 1  # under the keys' row
        shades = heatmap.evaluate("f => [...f.querySelectorAll('td')].map(td => td.style.background)")
        assert shades[1] == "rgba(63, 81, 181, 0)" and shades[0] != shades[1]  # a weight of 0, and not


def test_the_layernorm_widget_groups_forward_and_backward_and_explains_a_constant_row(widget_page):
    _, widget = open_widget(widget_page, "layernorm")
    groups = widget.evaluate("""w => Object.fromEntries([...w.querySelectorAll("section.w-group")].map(g =>
        [g.dataset.group, [...g.querySelectorAll("figure")].map(f => f.dataset.field)]))""")
    assert groups["forward"][0] == "x" and "out" in groups["forward"] and "dx" not in groups["forward"]
    assert groups["backward"][:2] == ["dout", "dx"] and groups["without eps"] == ["naive_rstd", "naive_out"]
    choose(widget, "layernorm", "row", 2)
    choose(widget, "layernorm", "move", 0)
    expected = layernorm_expected(2, 0, "page")
    rstd = layernorm_forward(expected["x"][None], *layernorm_example()[1:], EPS)[1][1][0, 0]
    note = widget.locator('figure[data-field="why"]').inner_text()
    assert f"rstd = 1 / sqrt(0 + eps) = {rstd:.4g}" in note and round(rstd, 1) == 316.2
    assert f"largest entry is {np.abs(expected['dx']).max():.4g}" in note
    choose(widget, "layernorm", "row", 0)
    assert "no spread" not in widget.locator('figure[data-field="why"]').inner_text()


def drawn_indices(widget, presses):
    """Press the sampling widget's draw button `presses` times: the index of each token drawn (12: one not listed).
    The presses are clicks of the button in the page, each followed by reading the tokens it drew."""
    indices = widget.evaluate("""(w, presses) => { const drawn = [];
        for (let i = 0; i < presses; i++) {
            w.querySelector('figure[data-field="draw"] button').click();
            drawn.push(...[...w.querySelectorAll(".w-token")].map(t => Number(t.dataset.index)));
        }
        return drawn; }""", presses)
    return np.array(indices)


def test_the_sampling_widget_draws_only_kept_tokens_as_often_as_it_shows(widget_page):
    _, widget = open_widget(widget_page, "sampling")
    source = sampling_source()
    logits, ids = np.array(source["logits"]), source["ids"]
    for choice in [(1, 3, 1), (0.8, 0, 0.9), (0, 0, 1), (2, 0, 1)]:
        for control, value in zip(("temperature", "top_k", "top_p"), choice):
            choose(widget, "sampling", control, value)
        probs = filtered_probs(logits, Sampling(*choice))
        shown_probs = np.append(probs[ids], 1 - probs[ids].sum())  # the listed tokens, then all others together
        drawn = drawn_indices(widget, 40)
        assert len(drawn) == 200 and (shown_probs[drawn] > 0).all(), f"{choice}: a token that was cut came out"
        frequencies = np.bincount(drawn, minlength=len(shown_probs)) / len(drawn)
        assert np.allclose(frequencies, shown_probs, atol=0.1), f"{choice}: drawn {frequencies}, shown {shown_probs}"
    assert widget.locator(".w-drawn").inner_text().startswith("seed 160: ")  # seeded: each press the next seed
