"""dmc-features: drawn images -> an encoder from the registry (tiny models built from
configuration, saved as the checkpoints users pass) -> Parquet -> dmc-train.

No weights are downloaded: every model here has random weights, built from its library's
configuration and loaded back through ``--checkpoint``. A family whose library does not
import here is skipped with the reason (on this machine's package index torchvision exists
only as CUDA builds, which cannot load beside the CPU torch; see setup.py's test extra).
"""

import glob
import importlib
import json
import os
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipelines import features as features_job
from pipelines import make_corpus
from pipelines import train as train_job
from pipelines.options import FeaturesOptions
from schemas.image_features import FEATURES_COLUMN, IMAGE_COLUMN, SHARDS
from tests.support.probes import run_probe
from transforms.errors import InputError
from transforms.files import read_parquet_shards
from transforms.vision.drawing import draw_image, encode, write_images
from transforms.vision.encoders.base import EncoderSpec
from transforms.vision.encoders.registry import ENCODERS, load_encoder
from transforms.vision.features import decode

VISION_MODULES = ("torchvision", "open_clip", "transformers")
IMAGE_SIZE = 32
TINY_TRAINING = [
    "--epochs", "1", "--ffnn_hidden", "16,8", "--vec2seq_sizes", "8:8:4",
    "--vec2seq_epochs", "1", "--dim", "32",
]  # fmt: skip


def importable(module: str) -> None:
    try:
        importlib.import_module(module)
    except Exception as error:  # ImportError, or a RuntimeError of a torchvision built for CUDA
        reason = str(error).strip().splitlines()[0]
        pytest.skip(f"{module} does not import here ({reason}); its tests run where it does")


def tiny_torchvision(folder) -> tuple[EncoderSpec, int]:
    """ResNet-18 without weights, its state_dict saved as a file."""
    importable("torchvision")
    import torch
    import torchvision

    torch.manual_seed(0)
    path = folder / "resnet18.pt"
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), path)
    return EncoderSpec("torchvision", "resnet18", "", str(path)), 512


def tiny_open_clip(folder) -> tuple[EncoderSpec, int]:
    """A one-layer CLIP of open_clip's, saved as open_clip saves a local model: a folder
    with open_clip_config.json and the weights."""
    importable("open_clip")
    import open_clip
    import torch

    vision = {"image_size": IMAGE_SIZE, "layers": 1, "width": 32, "head_width": 16}
    text = {"context_length": 8, "vocab_size": 100, "width": 16, "heads": 2, "layers": 1}
    config = {"embed_dim": 16, "vision_cfg": {**vision, "patch_size": 8}, "text_cfg": text}
    folder.mkdir(exist_ok=True)
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": config}))
    torch.manual_seed(0)
    model = open_clip.CLIP(**config)
    torch.save(model.state_dict(), folder / "open_clip_pytorch_model.bin")
    return EncoderSpec("open_clip", "", "", str(folder)), 16


def tiny_hf(folder) -> tuple[EncoderSpec, int]:
    """A two-layer CLIPVisionModel and its image processor, saved with save_pretrained."""
    importable("transformers")
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=IMAGE_SIZE,
        patch_size=8,
    )
    transformers.CLIPVisionModel(config).save_pretrained(folder)
    crop = {"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    processor = transformers.CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE}, crop_size=crop)
    processor.save_pretrained(folder)
    return EncoderSpec("transformers", "", "", str(folder)), 32


TINY = {"torchvision": tiny_torchvision, "open_clip": tiny_open_clip, "transformers": tiny_hf}


def test_every_registered_encoder_has_a_tiny_model_here():
    assert set(TINY) == set(ENCODERS)


@pytest.mark.parametrize("name", ENCODERS)
def test_each_encoder_loads_its_checkpoint_and_encodes_deterministically(name, tmp_path):
    spec, dim = TINY[name](tmp_path / "model")
    encoder = load_encoder(spec)
    assert isinstance(encoder, ENCODERS[name])
    pictures = [decode(encode(draw_image(0, image_id), "a.jpg")) for image_id in (1, 2, 3)]
    pixels = np.stack([encoder.preprocess(picture) for picture in pictures])
    vectors = encoder.encode(pixels)
    assert vectors.dtype == np.float32 and vectors.shape == (3, dim)
    assert np.isfinite(vectors).all()
    assert not np.allclose(vectors[0], vectors[1])
    np.testing.assert_array_equal(load_encoder(spec).encode(pixels), vectors)


@pytest.fixture(scope="module")
def drawn_images(synthetic_corpus, tmp_path_factory) -> str:
    """A picture of every image of the small dataset's corpus, and one truncated JPEG."""
    folder = tmp_path_factory.mktemp("drawn")
    with open(synthetic_corpus) as handle:
        images = json.load(handle)["images"]
    write_images(str(folder), 0, images, IMAGE_SIZE)
    whole = (folder / images[0]["file_name"]).read_bytes()
    (folder / "truncated.jpg").write_bytes(whole[: len(whole) // 2])
    return str(folder)


@pytest.mark.parametrize("name", ENCODERS)
def test_features_of_drawn_images_feed_the_trainer(
    name, drawn_images, small_dataset, tmp_path, capsys
):
    spec, dim = TINY[name](tmp_path / "model")
    output = str(tmp_path / "features.parquet")
    flags = ["--images", drawn_images, "--output", output, "--library", spec.library]
    flags += ["--checkpoint", spec.checkpoint, "--batch_size", "64"]
    assert features_job.main([*flags, *(["--model", spec.model] if spec.model else [])]) == 0
    summary = capsys.readouterr().out
    truncated = os.path.join(drawn_images, "truncated.jpg")
    assert f"features of 300 of 301 images written to {output}" in summary
    assert f"{truncated}: image file is truncated" in summary
    skipped = json.loads((tmp_path / "features.skipped.json").read_text())["unreadable"]
    assert [skip["file"] for skip in skipped] == [truncated]

    table = read_parquet_shards(output, SHARDS)
    images = table.column(IMAGE_COLUMN).to_pylist()
    assert images == sorted(name for name in os.listdir(drawn_images) if name != "truncated.jpg")
    vectors = np.asarray(table.column(FEATURES_COLUMN).to_pylist(), dtype=np.float32)
    assert vectors.shape == (300, dim)
    encoder = load_encoder(spec)
    with open(os.path.join(drawn_images, images[0]), "rb") as handle:
        alone = encoder.encode(encoder.preprocess(decode(handle.read()))[None])
    np.testing.assert_allclose(vectors[0], alone[0], rtol=1e-4, atol=1e-5)

    dataset, _ = small_dataset
    out = str(tmp_path / "train")
    argv = ["--dataset", dataset, "--output", out, "--image_features", output, *TINY_TRAINING]
    assert train_job.main(argv) == 0
    with open(os.path.join(out, "metrics.json")) as handle:
        metrics = json.load(handle)
    assert metrics["image_features"] == output
    assert {"Baseline-I2C", "FFNN"} <= {row["model"] for row in metrics["models"]}


def test_the_same_images_give_the_same_shards(drawn_images, tmp_path, monkeypatch):
    """Nine images in shards of about four: each shard sorted, every image in one, the
    same bytes whatever the batches; a rerun replaces the shards of one with fewer."""
    spec, _ = tiny_hf(tmp_path / "model")
    pattern = os.path.join(drawn_images, "SYNTH_00000000000*.jpg")  # images 1 to 9
    flags = ["--images", pattern, "--library", "transformers", "--checkpoint", spec.checkpoint]
    monkeypatch.setattr(features_job, "IMAGES_PER_SHARD", 4)
    written = []
    for run, batch_size in (("a", "4"), ("b", "3")):
        output = tmp_path / run
        assert features_job.main([*flags, "--output", str(output), "--batch_size", batch_size]) == 0
        written.append({path.name: path.read_bytes() for path in output.iterdir()})
    assert written[0] == written[1]
    assert sorted(written[0]) == [f"features-{s:05d}-of-00003.parquet" for s in range(3)]
    shards = [pq.read_table(tmp_path / "a" / name) for name in sorted(written[0])]
    for shard in shards:
        images = shard.column(IMAGE_COLUMN).to_pylist()
        assert images == sorted(images)
    images = [image for shard in shards for image in shard.column(IMAGE_COLUMN).to_pylist()]
    assert sorted(images) == sorted(os.path.basename(path) for path in glob.glob(pattern))

    monkeypatch.setattr(features_job, "IMAGES_PER_SHARD", 5_000)
    assert features_job.main([*flags, "--output", str(tmp_path / "a")]) == 0
    assert os.listdir(tmp_path / "a") == ["features-00000-of-00001.parquet"]
    assert read_parquet_shards(str(tmp_path / "a"), SHARDS).num_rows == 9


def test_the_generate_path_imports_no_vision_package():
    assert run_probe("vision_imports_probe", *VISION_MODULES).stdout.strip() == "[]"


@pytest.mark.parametrize(
    "spelling, renamed",
    [
        (["--library", "transformers"], []),
        # the spellings before one vocabulary across the commands: still run, with a warning
        (["--encoder", "hf"], ["--library hf is renamed", "--encoder is renamed --library"]),
    ],
)
def test_a_missing_vision_package_is_one_line_naming_the_extra(
    spelling, renamed, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "transformers", None)  # what an absent package raises
    (tmp_path / "a.jpg").write_bytes(encode(draw_image(0, 1), "a.jpg"))
    flags = ["--images", str(tmp_path), "--output", str(tmp_path / "f.parquet"), *spelling]
    assert features_job.main([*flags, "--checkpoint", str(tmp_path)]) == 2
    *warnings, error = capsys.readouterr().err.strip().splitlines()
    assert error == (
        "error: --library transformers needs transformers: pip install -e '.[vision]' (in the "
        "project's folder)"
    )
    assert len(warnings) == len(renamed)
    for warning, old in zip(warnings, renamed, strict=True):
        assert warning.startswith(f"warning: {old}")
    assert not (tmp_path / "f.parquet").exists()


def test_a_checkpoint_that_is_no_model_is_an_error_naming_it(tmp_path, capsys):
    importable("transformers")
    (tmp_path / "a.jpg").write_bytes(encode(draw_image(0, 1), "a.jpg"))
    empty = tmp_path / "empty"
    empty.mkdir()
    flags = ["--images", str(tmp_path / "*.jpg"), "--output", str(tmp_path / "f.parquet")]
    assert features_job.main([*flags, "--library", "transformers", "--checkpoint", str(empty)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"error: --checkpoint {empty}: transformers cannot load")
    assert error.count("\n") == 0


@pytest.mark.parametrize(
    "change, message",
    [
        ({}, "--library torchvision needs --pretrained or --checkpoint"),
        ({"library": "open_clip"}, "--library open_clip needs --pretrained or --checkpoint"),
        ({"pretrained": "DEFAULT", "checkpoint": "m.pt"}, "are alternatives"),
        ({"checkpoint": "m.pt", "batch_size": 0}, "--batch_size must be >= 1"),
        ({"library": "vgg"}, "--library is one of torchvision, open_clip, transformers"),
    ],
)
def test_invalid_options_are_explained(change, message):
    options = FeaturesOptions(images="x", output="f.parquet", **change)
    with pytest.raises(InputError, match=message):
        options.validate()


def test_no_matching_images_and_clashing_names_are_errors(tmp_path, capsys):
    flags = [
        "--output",
        str(tmp_path / "f.parquet"),
        "--library",
        "transformers",
        "--checkpoint",
        "x",
    ]
    assert features_job.main(["--images", str(tmp_path / "*.png"), *flags]) == 2
    assert capsys.readouterr().err.strip().endswith("*.png: no files match")
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.jpg").write_bytes(b"")
    assert features_job.main(["--images", str(tmp_path / "*" / "x.jpg"), *flags]) == 2
    assert "two image files are named x.jpg" in capsys.readouterr().err


def test_images_checkpoint_and_output_on_gcs_give_the_local_bytes(tmp_path, monkeypatch):
    """make_corpus draws into a bucket, dmc-features reads images and a save_pretrained
    folder from it and writes there: the bytes of the same run on local files."""
    from google.cloud import storage

    from tests.support.gcs_emulator import PROJECT, gcs_servers

    spec, _ = tiny_hf(tmp_path / "model")
    with gcs_servers() as environment:
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        bucket = storage.Client(project=PROJECT).create_bucket("dmc-features")
        corpus = ["--output", str(tmp_path / "c.json"), "--num_images", "6"]
        assert make_corpus.main([*corpus, "--images_dir", "gs://dmc-features/images"]) == 0
        assert make_corpus.main([*corpus, "--images_dir", str(tmp_path / "images")]) == 0
        for path in (tmp_path / "model").iterdir():
            bucket.blob(f"model/{path.name}").upload_from_filename(str(path))
        flags = ["--library", "transformers", "--batch_size", "4"]
        remote = ["--images", "gs://dmc-features/images", "--output", "gs://dmc-features/f.parquet"]
        assert features_job.main([*remote, *flags, "--checkpoint", "gs://dmc-features/model"]) == 0
        local = ["--images", str(tmp_path / "images"), "--output", str(tmp_path / "f.parquet")]
        assert features_job.main([*local, *flags, "--checkpoint", spec.checkpoint]) == 0
        shard = "f.parquet/features-00000-of-00001.parquet"
        assert bucket.blob(shard).download_as_bytes() == (tmp_path / shard).read_bytes()
        skipped = json.loads(bucket.blob("f.skipped.json").download_as_bytes())
        assert skipped == {"unreadable": []}
