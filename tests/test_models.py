"""The models' maths on tiny problems: gradients against finite differences, fits that learn."""

import numpy as np
import pytest

from pipelines.options import TrainOptions
from schemas.examples import TEXT_FEATURES, Batch
from transforms.trainer.audits import AUDITS, hub_scores
from transforms.trainer.models import (
    FITTERS,
    accuracy,
    cross_entropy,
    hinge_loss,
    init_network,
    others_mean,
    ridge,
)


def numeric_gradient(loss, param: np.ndarray, step: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(param)
    for index in np.ndindex(param.shape):
        saved = param[index]
        param[index] = saved + step
        above = loss()
        param[index] = saved - step
        below = loss()
        param[index] = saved
        grad[index] = (above - below) / (2 * step)
    return grad


def linked_problem(n: int, dim: int = 6, noise: float = 0.3, seed: int = 0, k: int = 5) -> Batch:
    """Targets are a fixed linear map of the image plus noise; decoys are random; k options."""
    rng = np.random.default_rng(seed)
    mapping = np.random.default_rng(99).standard_normal((dim, dim))
    images = rng.standard_normal((n, dim))
    options = rng.standard_normal((n, k, dim))
    labels = rng.integers(0, k, size=n)
    options[np.arange(n), labels] = images @ mapping / np.sqrt(dim) + noise * rng.standard_normal(
        (n, dim)
    )
    text = rng.standard_normal((n, k, len(TEXT_FEATURES)))
    words = rng.choice(["a", "dog", "cat", "runs", "on", "grass"], size=(n, k, 4))
    texts = np.empty((n, k), dtype=object)
    texts[:] = [[" ".join(option) for option in row] for row in words]
    return Batch(images, options, text, labels, texts)


def test_ridge_matches_least_squares_with_an_unpenalised_bias():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 3))
    y = x @ rng.standard_normal((3, 2)) + np.array([5.0, -2.0])
    weights, bias = ridge(x, y, alpha=1e-9)
    design = np.hstack([x, np.ones((40, 1))])
    expected = np.linalg.lstsq(design, y, rcond=None)[0]
    np.testing.assert_allclose(weights, expected[:3], atol=1e-6)
    np.testing.assert_allclose(bias, expected[3], atol=1e-6)
    shrunk, _ = ridge(x, y, alpha=1e3)
    assert np.linalg.norm(shrunk) < 0.5 * np.linalg.norm(weights)


def test_hinge_subgradient_matches_finite_differences():
    batch = linked_problem(7, dim=4)
    theta = np.random.default_rng(2).standard_normal((4, 4))

    def loss() -> float:
        return hinge_loss(theta, batch.images, batch.options, batch.labels, l2=0.1)[0]

    _, grad = hinge_loss(theta, batch.images, batch.options, batch.labels, l2=0.1)
    np.testing.assert_allclose(grad, numeric_gradient(loss, theta), rtol=1e-5, atol=1e-7)


def test_hinge_uses_the_worst_decoy_and_is_zero_beyond_the_margin():
    images = np.array([[1.0, 0.0]])
    options = np.array([[[3.0, 0.0], [1.5, 0.0], [2.5, 0.0], [0.0, 0.0], [-1.0, 0.0]]])
    theta = np.eye(2)
    loss, grad = hinge_loss(theta, images, options, np.array([0]), l2=0.0)
    assert loss == pytest.approx(0.5)  # 1 + f(worst decoy 2.5) - f(target 3)
    np.testing.assert_allclose(grad, [[-0.5, 0.0], [0.0, 0.0]])
    loss, grad = hinge_loss(2 * theta, images, options, np.array([0]), l2=0.0)
    assert loss == 0.0 and not grad.any()


def test_cross_entropy_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((10, 5))
    y = rng.integers(0, 2, size=10)
    params = init_network((5, 4, 3, 2), seed=4)
    _, grads = cross_entropy(params, x, y)
    assert [g.shape for g in grads] == [p.shape for p in params]
    for param, grad in zip(params, grads, strict=True):
        numeric = numeric_gradient(lambda: cross_entropy(params, x, y)[0], param)
        np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-8)


def test_others_mean_leaves_each_option_out():
    values = np.array([[[1.0], [2.0], [3.0], [4.0], [10.0]]])
    np.testing.assert_allclose(others_mean(values)[0, :, 0], [4.75, 4.5, 4.25, 4.0, 2.5])


CONFIG = TrainOptions(
    dataset="",
    output="",
    epochs=8,
    batch_size=10,
    ffnn_hidden="16,8",
    ridge_alphas="0.1,10",
    linm_learning_rate=0.01,
).train_config()


@pytest.mark.parametrize("k", [5, 4, 2])
@pytest.mark.parametrize("name", ["Baseline-I2C", "Baseline-C2I", "Baseline-LinM", "FFNN"])
def test_image_models_learn_a_linked_problem(name, k):
    problems = ((400, 0), (100, 1), (200, 2))
    train, dev, test = (linked_problem(n, seed=s, k=k) for n, s in problems)
    model = FITTERS[name](name, train, dev, CONFIG)
    assert model.scores(test).shape == (200, k)
    assert accuracy(model.scores(test), test.labels) > 0.6 + 0.4 / k  # chance: 1 / k
    assert model.selection
    assert all(np.all(np.isfinite(value)) for value in model.arrays().values())


@pytest.mark.parametrize("k", [4, 2])
def test_text_models_and_rules_score_k_options(k):
    train, dev, test = (linked_problem(n, seed=s, k=k) for n, s in ((100, 0), (50, 1), (50, 2)))
    for name in ("Text-FFNN", "Bigram LM"):
        assert FITTERS[name](name, train, dev, CONFIG).scores(test).shape == (50, k)
    for rule in AUDITS:
        assert rule.scores(test).shape == (50, k)
    hubs = hub_scores(np.array([[1.0, 0.3], [0.3, 1.0]]))
    np.testing.assert_allclose(hubs, [0.3, 0.3])  # two options: each one's similarity to the other


def test_text_model_never_looks_at_the_image():
    train, dev, test = (linked_problem(n, seed=s) for n, s in ((200, 0), (50, 1), (50, 2)))
    model = FITTERS["Text-FFNN"]("Text-FFNN", train, dev, CONFIG)
    blind = Batch(np.zeros_like(test.images), test.options, test.text, test.labels, test.texts)
    np.testing.assert_array_equal(model.scores(test), model.scores(blind))
    image_model = FITTERS["FFNN"]("FFNN", train, dev, CONFIG)
    assert not np.array_equal(image_model.scores(test), image_model.scores(blind))
