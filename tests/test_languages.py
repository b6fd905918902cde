"""Captions in any language (issue #24): the tokeniser registry, --language auto, the
English default's guard, and where a version records its language."""

import dataclasses
import json
import logging
import os
import sys

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.cli import parse_options
from pipelines.cli.tables import with_tables
from pipelines.options import GenerateOptions
from pipelines.store.manifest import language_record, read_inputs, recorded_options
from pipelines.store.versions import version_name
from schemas.records import RawCaption
from tests.support.local import local_pipeline
from transforms.corpus.languages import chinese, japanese
from transforms.corpus.languages.detect import (
    SAMPLE_PER_FILE,
    caption_language,
    check_english,
    detect_language,
    resolve_language,
)
from transforms.corpus.languages.registry import AUTO, ENGLISH, LANGUAGES, language_table
from transforms.corpus.normalize import NormalizeCaptions, normalize_caption
from transforms.errors import InputError
from transforms.report.card import front_matter
from transforms.report.croissant import croissant_metadata
from transforms.trainer.features import open_class_words

COCO_VAL = os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "data", "coco", "captions_val2017.json"
)

# One caption per registered language: a language added to the registry needs one here.
SAMPLES = {
    "en": "A man's 2 dogs, on the BEACH!",
    "de": "Zwei Männer betrachten etwas im Garten; der Fußball-Spieler lacht.",
    "fr": "L\u2019homme d'aujourd'hui regarde l'océan, près d'un café.",
    "cs": "Dva muži se dívají na něco v zahradě.",
    "es": "Dos niños juegan al fútbol en la playa.",
    "it": "Un'auto rossa è parcheggiata davanti all'edificio.",
    "nl": "Twee mannen fietsen langs de gracht in Amsterdam.",
    "pt": "Uma criança come maçã na cozinha.",
    "pl": "Dwóch mężczyzn gra w piłkę na plaży.",
    "sv": "Två hundar springer över en äng.",
    "ja": "「二人の男性が庭で何かを見ている」",
    "zh": "两个男人在花园里看着什么东西。",
}


def raw(captions: list[str], prefix: str = "") -> list[RawCaption]:
    return [
        RawCaption(f"{prefix}{i}", f"img{i}", caption, f"{i}.jpg", "")
        for i, caption in enumerate(captions)
    ]


def test_every_registered_language_has_a_sample_here():
    assert set(SAMPLES) == set(LANGUAGES)


@pytest.mark.parametrize("code", sorted(LANGUAGES))
def test_each_language_tokenises_into_words_without_whitespace_idempotently(code):
    language = LANGUAGES[code]
    tokens = language.tokens(SAMPLES[code])
    assert len(tokens) >= 4
    assert all(token and not any(c.isspace() for c in token) for token in tokens)
    assert language.tokens(" ".join(tokens)) == tokens  # what the pipeline stores reads back
    assert language.code == code and language.tokeniser and language.name


def test_english_is_the_papers_rule():
    english = LANGUAGES["en"]
    assert english.tokens("A man's 2 dogs, on the BEACH!") == [
        *("a", "man", "s", "dogs", "on", "the", "beach")
    ]
    assert english.tokens("Zwei Männer") == ["zwei", "m", "nner"]  # why --language exists
    assert normalize_caption("café " * 40) == ("caf",) * 30
    assert ENGLISH is english and english.tokeniser == "ascii-letters"


def test_spaced_languages_keep_their_letters_hyphens_and_apostrophes():
    german = LANGUAGES["de"]
    assert german.tokens("Zwei Männer") == ["zwei", "männer"]
    assert german.tokens("Ein FUSSBALL-Spieler, geht\u2019s?") == [
        "ein",
        "fussball-spieler",
        "geht's",
    ]
    assert german.tokens("Die Straße \u2013 nass") == ["die", "strasse", "nass"]  # casefold, a dash
    assert german.tokens("\uff21\uff22\uff23\uff11\uff12\uff13") == [
        "abc123"
    ]  # NFKC: full-width forms
    assert german.tokens("'quoted' -edge- 3-4") == ["quoted", "edge", "3-4"]
    assert LANGUAGES["cs"].tokens("Muž s kočkou.") == ["muž", "s", "kočkou"]


def test_french_and_italian_elision_split_after_the_apostrophe():
    french = LANGUAGES["fr"]
    assert french.tokens("L'homme") == ["l'", "homme"]
    assert french.tokens("L\u2019homme d\u2019aujourd\u2019hui jusqu'à l'arc-en-ciel") == [
        *("l'", "homme", "d'", "aujourd'hui", "jusqu'", "à", "l'", "arc-en-ciel")
    ]
    assert french.tokens("l' homme") == ["l'", "homme"]
    assert LANGUAGES["it"].tokens("dell'acqua") == ["dell'", "acqua"]
    assert LANGUAGES["de"].tokens("l'homme") == ["l'homme"]  # no elision in German


def test_japanese_is_split_into_words():
    assert LANGUAGES["ja"].tokens("「二人の男性が庭で何かを見ている」") == [
        *("二人", "の", "男性", "が", "庭", "で", "何", "か", "を", "見", "て", "いる")
    ]


def test_chinese_is_split_into_words():
    assert LANGUAGES["zh"].tokens("两个男人在花园里看着什么东西。") == [
        *("两个", "男人", "在", "花园里", "看着", "什么", "东西")
    ]


@pytest.mark.parametrize(
    ("code", "module", "missing", "named"),
    [
        ("ja", japanese, "fugashi", "fugashi and unidic-lite: pip install -e '.[ja]'"),
        ("ja", japanese, "unidic_lite", "fugashi and unidic-lite: pip install -e '.[ja]'"),
        ("zh", chinese, "jieba", "jieba: pip install -e '.[zh]'"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(monkeypatch, code, module, missing, named):
    monkeypatch.setitem(sys.modules, missing, None)  # import fails as if not installed
    loader = module._tagger if code == "ja" else module._segmenter
    loader.cache_clear()  # loaded by an earlier test: a failed load is not cached
    message = f"--language {code} needs {named}"
    with pytest.raises(InputError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        LANGUAGES[code].check_installed()
    with pytest.raises(InputError, match="needs"):
        LANGUAGES[code].tokens(SAMPLES[code])


@pytest.mark.parametrize(
    ("code", "captions"),
    [
        ("ja", ["犬が公園で走っている", "男性が自転車に乗っている", "子供がボールで遊ぶ"]),
        ("zh", ["一只狗在公园里跑", "一个男人骑自行车", "孩子们在玩球"]),
        ("de", ["Ein Hund läuft im Park", "Zwei Männer auf der Straße", "Eine Frau mit Hut"]),
        ("fr", ["Un chien court dans le parc", "Deux hommes à vélo", "Une femme avec un chapeau"]),
        ("cs", ["Pes běží v parku", "Dva muži na kole", "Žena se psem na ulici"]),
        ("en", ["A dog runs in the park", "Two men on bicycles", "A woman with a hat"]),
    ],
)
def test_auto_detection_picks_the_language_and_says_why(code, captions):
    language, reason = detect_language(raw(captions))
    assert language is LANGUAGES[code]
    assert reason.startswith(f"--language auto chose {code} ")
    assert "3 of the first 3 captions" in reason


def test_a_caption_without_evidence_reads_as_no_language():
    assert caption_language("Hund") is None
    assert caption_language("Собака бежит") is None
    with pytest.raises(InputError, match="cannot tell the language of the 1 sampled captions"):
        detect_language(raw(["Собака бежит"]))


def test_a_mixed_sample_is_refused_under_auto_naming_languages_and_examples():
    sample = raw(["Ein Hund läuft im Park"] * 8, "de") + raw(["犬が公園で走っている"] * 2, "ja")
    with pytest.raises(InputError) as refused:
        resolve_language(AUTO, sample)
    message = str(refused.value)
    assert "several languages: German (8, e.g. caption de0), Japanese (2, e.g. caption ja0)" in (
        message
    )
    assert "\n" not in message
    assert resolve_language("de", sample) == (LANGUAGES["de"], None)  # named: no refusal


def test_a_second_language_below_the_share_is_not_mixed():
    sample = raw(["Ein Hund läuft im Park"] * 19, "de") + raw(["A dog in the park"], "en")
    assert detect_language(sample)[0] is LANGUAGES["de"]


def test_the_english_default_refuses_german_and_says_what_to_pass():
    german = raw(["Zwei Männer im Garten", "Ein Hund", "Eine Frau läuft", "Ein Mädchen"])
    with pytest.raises(InputError, match=r"^3 of the first 4 captions have letters outside a-z"):
        check_english(german)
    with pytest.raises(InputError, match="they look German: pass --language de or --language auto"):
        resolve_language("en", german)
    japanese_captions = raw(["犬が公園で走っている"])
    with pytest.raises(InputError, match="they look Japanese: pass --language ja"):
        resolve_language("en", japanese_captions)


def test_the_english_default_passes_a_rare_accent():
    check_english(raw(["A man in a café"] + ["A dog on a beach"] * 40))


@pytest.mark.skipif(not os.path.exists(COCO_VAL), reason="COCO val2017 captions not here")
def test_the_english_default_passes_coco_val2017_and_auto_picks_english():
    _, sample = read_inputs([COCO_VAL])
    assert len(sample) == SAMPLE_PER_FILE
    assert resolve_language("en", sample) == (ENGLISH, None)
    assert resolve_language(AUTO, sample)[0] is ENGLISH
    with open(COCO_VAL, encoding="utf-8") as handle:
        everything = raw([a["caption"] for a in json.load(handle)["annotations"]])
    check_english(everything)


def test_auto_is_resolved_from_the_input_files_and_logged_once(tmp_path, caplog):
    captions = ["Ein Hund läuft im Park", "Zwei Männer"]
    path = tmp_path / "captions.token"
    path.write_text("".join(f"{i}.jpg#0\t{c}\n" for i, c in enumerate(captions)), "utf-8")
    caplog.set_level(logging.INFO)
    options = GenerateOptions(input=str(path), output="out", language=AUTO)
    assert options.with_language(read_inputs([str(path)])[1]).language == "de"
    logged = [r.getMessage() for r in caplog.records if "--language auto" in r.getMessage()]
    reason = detect_language(read_inputs([str(path)])[1])[1]
    assert logged == [f"language: {reason}"]  # a progress line: a scheduler's log keeps it


def test_normalize_captions_tokenises_by_the_language():
    captions = raw(["Zwei Männer im Garten.", "L'homme", "。"])
    with local_pipeline() as pipeline:
        normalized = (pipeline | beam.Create(captions[:2]) | NormalizeCaptions(LANGUAGES["de"]))[
            "captions"
        ]
        assert_that(
            normalized | beam.Map(lambda caption: caption.text),
            equal_to(["zwei männer im garten", "l'homme"]),
        )


def test_the_option_offers_the_registry_and_auto():
    options, _ = parse_options(["--input", "a", "--output", "b", "--language", "ja"])
    assert options.caption_language() is LANGUAGES["ja"]
    with pytest.raises(InputError, match=r"invalid choice: 'xx'.*'zh', 'auto'"):
        parse_options(["--input", "a", "--output", "b", "--language", "xx"])
    with pytest.raises(ValueError, match="resolved"):
        dataclasses.replace(options, language=AUTO).caption_language()


def test_english_versions_keep_their_name_and_manifest_others_record_the_language():
    checksums = [{"sha256": "a" * 64}]
    english = GenerateOptions(input="a", output="b", label="coco")
    german = dataclasses.replace(english, language="de")
    assert "language" not in recorded_options(english)
    assert recorded_options(german)["language"] == "de"
    assert version_name(english, checksums).count("-") == 1  # coco-<digest>
    name = version_name(german, checksums)
    assert (
        name.startswith("coco-de-unicode-words-")
        and name[-12:] != version_name(english, checksums)[-12:]
    )
    assert version_name(dataclasses.replace(german, language="ja"), checksums).startswith(
        "coco-ja-fugashi-unidic-lite-"
    )
    record = language_record(LANGUAGES["ja"])
    assert record["tokeniser"] == "fugashi-unidic-lite"
    assert set(record["packages"]) == {"fugashi", "unidic-lite"}


def test_the_cards_yaml_names_the_language():
    statistics = {"splits": {}, "total": {"instances": 10}}
    corpus = type("Corpus", (), {"license": "cc-by-4.0", "tag": "coco"})()
    assert "language:\n- ja\n" in front_matter("", statistics, corpus, "closed_sets", {}, "ja")


@pytest.mark.parametrize("decoys", ["switch_people", "madlibs_hard"])
def test_english_only_strategies_refuse_another_language_in_one_line(decoys):
    options = GenerateOptions(input="a", output="b", decoys=decoys, language="de")
    with pytest.raises(InputError, match=f"^--decoys {decoys} .*; not --language de$"):
        options.validate()
    dataclasses.replace(options, language="en").validate()
    dataclasses.replace(options, language=AUTO).validate()  # checked once resolved


def test_madlibs_hard_with_objects_reads_any_language():
    options = GenerateOptions(input="a", output="b", decoys="madlibs_hard", language="ja")
    with pytest.raises(InputError, match="give --objects"):
        options.validate()
    dataclasses.replace(options, objects="instances.json").validate()
    GenerateOptions(input="a", output="b", decoys="closed_sets", language="ja").validate()


def test_auto_resolving_to_another_language_is_checked_against_the_strategy(tmp_path):
    path = tmp_path / "captions.token"
    path.write_text("1.jpg#0\tEin Hund läuft im Park\n", "utf-8")
    options = GenerateOptions(input=str(path), output="out", decoys="switch_people", language=AUTO)
    with pytest.raises(InputError, match="not --language de"):
        options.with_language(read_inputs([str(path)])[1])


def test_concept_words_keep_single_characters_of_other_scripts():
    assert open_class_words("a dog s on the 犬 の beach") == {"dog", "犬", "の", "beach"}


def test_the_manual_lists_every_language_as_the_registry_prints_it():
    page = os.path.join(os.path.dirname(__file__), "..", "docs", "languages.md")
    with open(page, encoding="utf-8") as handle:
        assert language_table() in with_tables(handle.read()), (
            "docs/languages.md lacks its <!-- table: languages --> line"
        )


def test_croissant_names_a_recorded_language_only():
    shards = [{"path": "parquet/dev/dev-00000-of-00001.parquet", "bytes": 1, "sha256": "0" * 64}]
    about = dict(name="n", version="v", package="0.1.0", description="d", license="l", citation="c")
    metadata = croissant_metadata(**about, num_options=5, shards=shards, language="ja")
    assert metadata["inLanguage"] == "ja"
    assert "inLanguage" not in croissant_metadata(**about, num_options=5, shards=shards)
