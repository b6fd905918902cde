import hashlib
import json

from pipelines import make_corpus
from pipelines.options.make_corpus import MAX_IMAGES
from transforms.corpus.read import parse_captions
from transforms.corpus.synthetic import coco_document, images


def test_deterministic_and_a_prefix_of_larger_corpora():
    small = list(images(seed=3, num_images=50))
    assert small == list(images(seed=3, num_images=50))
    assert small == list(images(seed=3, num_images=200))[:50]
    assert small != list(images(seed=4, num_images=50))


def test_five_varied_captions_per_image():
    corpus = list(images(seed=0, num_images=300))
    assert all(len(captions) == 5 for _, captions in corpus)
    distinct = sum(len(set(captions)) for _, captions in corpus) / len(corpus)
    assert distinct > 4.0
    vocabulary = {w for _, captions in corpus for c in captions for w in c.lower().split()}
    assert len(vocabulary) > 300


def test_the_default_corpus_is_unchanged_byte_for_byte():
    # the bytes write_coco wrote for seed 0, 20 images before --captions_per_image existed
    data = json.dumps(coco_document(seed=0, num_images=20)).encode()
    digest = "ca0198e6f2f87c7dc96e2536c872ed5d93b47d3f6a0a976b01cd05d69f3f44e5"
    assert hashlib.sha256(data).hexdigest() == digest
    assert data == json.dumps(coco_document(seed=0, num_images=20, captions_per_image=5)).encode()


def test_fewer_captions_per_image_are_each_image_s_first():
    five = list(images(seed=2, num_images=100))
    for count in (1, 3):
        fewer = list(images(seed=2, num_images=100, captions_per_image=count))
        assert fewer == [(image_id, captions[:count]) for image_id, captions in five]


def test_one_caption_per_image_reads_back_as_conceptual_captions_shape(tmp_path):
    path = tmp_path / "captions_synthetic.json"
    argv = ["--output", str(path), "--num_images", "40", "--captions_per_image", "1"]
    assert make_corpus.main(argv) == 0
    records = list(parse_captions(path.name, path.read_bytes()))
    assert len(records) == 40
    assert len({r.image_id for r in records}) == 40
    first = [captions[0] for _, captions in images(seed=0, num_images=40)]
    assert [r.caption for r in records] == first


def test_make_corpus_bounds(tmp_path, monkeypatch, capsys):
    written = []

    def write_coco(path, seed, num_images, captions_per_image):  # what main asks for, not done
        written.append((num_images, captions_per_image))
        return {"images": []}

    monkeypatch.setattr(make_corpus, "write_coco", write_coco)
    output = ["--output", str(tmp_path / "c.json")]
    assert MAX_IMAGES == 660_000  # 3.3M captions at five per image
    assert make_corpus.main([*output, "--num_images", "660000"]) == 0
    assert make_corpus.main([*output, "--num_images", "660000", "--captions_per_image", "1"]) == 0
    assert written == [(660_000, 5), (660_000, 1)]
    for flag, value in [
        ("--num_images", "660001"),
        ("--num_images", "0"),
        ("--captions_per_image", "0"),
        ("--captions_per_image", "6"),
    ]:
        assert make_corpus.main([*output, flag, value]) == 2
        assert f"error: {flag} must be between 1 and" in capsys.readouterr().err
    for argv, message in [
        (["--output", str(tmp_path)], f"--output {tmp_path}: is a directory; give the path"),
        ([*output, "--instances", f"{tmp_path}/"], f"--instances {tmp_path}/: is a directory"),
    ]:
        assert make_corpus.main(argv) == 2
        [line] = capsys.readouterr().err.splitlines()
        assert line.startswith(f"error: {message}")
    assert len(written) == 2


def test_reads_back_as_a_coco_captions_file():
    data = json.dumps(coco_document(seed=0, num_images=20)).encode()
    records = list(parse_captions("captions_synthetic.json", data))
    assert len(records) == 100
    assert len({r.caption_id for r in records}) == 100
    assert records[0].file_name == "SYNTH_000000000001.jpg"
