"""Every model the trainer fits, registered once, in the order of the paper's Table 3.

The fixed models are :func:`fitters`; Vec2seq+FFNN adds one model per
(size, lambda_gen) the run asks for (Tables 4 and 5). The ridge baselines
and the networks need the ``train`` extra (scikit-learn, PyTorch); without
it only the bigram LM is available, so ``generate``'s text-only audit still
runs (and says what it left out) and ``pipelines.train`` refuses to start.
"""

import functools
from collections.abc import Callable

from transforms.errors import InputError, install_command
from transforms.trainer.models import Model, TrainConfig, fit_target_lm
from transforms.trainer.stream import FitData

Fitter = Callable[[str, FitData, TrainConfig], Model]
TRAIN_EXTRA = install_command("train")
VEC2SEQ = "Vec2seq+FFNN"


@functools.cache
def _train_extra() -> tuple[dict[str, Fitter], str | None]:
    """(the fixed models, what of the train extra is missing or None), imported when first
    asked for: a module that only names the trainer (the options, so --help) loads no PyTorch.
    """
    try:
        from transforms.trainer import neural, regression, vec2seq  # noqa: F401 (the extra's)
    except ModuleNotFoundError as missing:  # the train extra is not installed
        return {"Bigram LM": fit_target_lm}, f"{missing.name} is not installed ({TRAIN_EXTRA})"
    return {
        "Baseline-I2C": regression.FIT_I2C,
        "Baseline-C2I": regression.FIT_C2I,
        "Baseline-LinM": neural.fit_bilinear,
        "FFNN": functools.partial(neural.fit_classifier, inputs="image"),
        "Text-FFNN": functools.partial(neural.fit_classifier, inputs="text"),
        "Bigram LM": fit_target_lm,
    }, None


def fitters() -> dict[str, Fitter]:
    """Name -> fit of every fixed model there is: the bigram LM alone without the train extra."""
    return _train_extra()[0]


def missing_extra() -> str | None:
    return _train_extra()[1]


def require_train_extra() -> None:
    if missing_extra():
        raise InputError(f"the trainer needs the train extra: {missing_extra()}")


def vec2seq_name(config: TrainConfig, size, lambda_gen: float) -> str:
    """ "Vec2seq+FFNN" alone when the run fits one; named by size and lambda_gen in a sweep."""
    if len(config.vec2seq_sizes) * len(config.lambda_gen) == 1:
        return VEC2SEQ
    return f"{VEC2SEQ} {size} λ={lambda_gen:g}"


def run_fitters(config: TrainConfig) -> dict[str, Callable[[FitData], Model]]:
    """Name -> fit of every model a trainer run fits, in table order."""
    require_train_extra()
    from transforms.trainer.vec2seq import fit_vec2seq  # the extra, now known to be there

    fits = {name: functools.partial(fit, name, config=config) for name, fit in fitters().items()}
    for size in config.vec2seq_sizes:
        for lambda_gen in config.lambda_gen:
            name = vec2seq_name(config, size, lambda_gen)
            fits[name] = functools.partial(
                fit_vec2seq, name, config=config, size=size, lambda_gen=lambda_gen
            )
    return fits
