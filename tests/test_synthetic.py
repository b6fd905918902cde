import json

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


def test_reads_back_as_a_coco_captions_file():
    data = json.dumps(coco_document(seed=0, num_images=20)).encode()
    records = list(parse_captions("captions_synthetic.json", data))
    assert len(records) == 100
    assert len({r.caption_id for r in records}) == 100
    assert records[0].file_name == "SYNTH_000000000001.jpg"
