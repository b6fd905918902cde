"""The models' maths on tiny problems: losses and gradients against definitions and finite
differences, fits that learn, in any number of options."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import Ridge

from pipelines.options import TrainOptions
from schemas.examples import TEXT_FEATURES, Batch
from transforms.trainer.models import accuracy
from transforms.trainer.neural import (
    BilinearModule,
    feedforward,
    hinge_loss,
    others_mean,
    seeded,
)
from transforms.trainer.registry import fitters
from transforms.trainer.regression import Moments
from transforms.trainer.stream import FitData, InMemoryExamples
from transforms.trainer.text_rules import TEXT_RULES, hub_scores


def linked_problem(n: int, dim: int = 6, noise: float = 0.3, seed: int = 0, k: int = 5) -> Batch:
    """Targets are a fixed linear map of the image plus noise; decoys are random; k options."""
    rng = np.random.default_rng(seed)
    mapping = np.random.default_rng(99).standard_normal((dim, dim))
    images = rng.standard_normal((n, dim)).astype(np.float32)
    options = rng.standard_normal((n, k, dim)).astype(np.float32)
    labels = rng.integers(0, k, size=n)
    options[np.arange(n), labels] = images @ mapping / np.sqrt(dim) + noise * rng.standard_normal(
        (n, dim)
    )
    text = rng.standard_normal((n, k, len(TEXT_FEATURES))).astype(np.float32)
    words = rng.choice(["a", "dog", "cat", "runs", "on", "grass"], size=(n, k, 4))
    texts = np.empty((n, k), dtype=object)
    texts[:] = [[" ".join(option) for option in row] for row in words]
    return Batch(images, options, text, labels, texts)


def fit_data(train: Batch, dev: Batch) -> FitData:
    return FitData(InMemoryExamples(train), InMemoryExamples(dev))


def test_ridge_from_streamed_moments_matches_scikit_learn_and_least_squares():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 3))
    y = x @ rng.standard_normal((3, 2)) + np.array([5.0, -2.0])
    moments = Moments.of((x[start : start + 7], y[start : start + 7]) for start in range(0, 40, 7))
    weights, bias = moments.ridge(alpha=1e-9)
    design = np.hstack([x, np.ones((40, 1))])
    expected = np.linalg.lstsq(design, y, rcond=None)[0]
    np.testing.assert_allclose(weights, expected[:3], atol=1e-6)
    np.testing.assert_allclose(bias, expected[3], atol=1e-6)
    for alpha in (0.5, 30.0):
        reference = Ridge(alpha=alpha).fit(x, y)
        weights, bias = moments.ridge(alpha)
        np.testing.assert_allclose(weights, reference.coef_.T, atol=1e-9)
        np.testing.assert_allclose(bias, reference.intercept_, atol=1e-9)


def test_hinge_gradient_matches_finite_differences():
    batch = linked_problem(7, dim=4)
    module = BilinearModule(4, 4).double()
    with torch.no_grad():
        module.theta.copy_(torch.from_numpy(np.random.default_rng(2).standard_normal((4, 4))))
    images, options = torch.from_numpy(batch.images).double(), torch.from_numpy(batch.options)
    labels = torch.from_numpy(batch.labels)

    def loss(theta: torch.Tensor) -> torch.Tensor:
        scores = torch.func.functional_call(module, {"theta": theta}, (images, options.double()))
        return hinge_loss(scores, labels)

    theta = module.theta.detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(loss, (theta,), eps=1e-6, atol=1e-6)


def test_hinge_uses_the_worst_decoy_and_is_zero_beyond_the_margin():
    images = torch.tensor([[1.0, 0.0]])
    options = torch.tensor([[[3.0, 0.0], [1.5, 0.0], [2.5, 0.0], [0.0, 0.0], [-1.0, 0.0]]])
    module = BilinearModule(2, 2)
    with torch.no_grad():
        module.theta.copy_(torch.eye(2))
    loss = hinge_loss(module(images, options), torch.tensor([0]))
    loss.backward()
    assert float(loss.detach()) == pytest.approx(0.5)  # 1 + f(worst decoy 2.5) - f(target 3)
    np.testing.assert_allclose(module.theta.grad.numpy(), [[-0.5, 0.0], [0.0, 0.0]])
    with torch.no_grad():
        module.theta.mul_(2)
    assert float(hinge_loss(module(images, options), torch.tensor([0])).detach()) == 0.0


def test_feedforward_cross_entropy_matches_its_definition_and_finite_differences():
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((10, 5)))
    y = torch.from_numpy(rng.integers(0, 2, size=10))
    network = feedforward((5, 4, 3, 2), seeded(0, "test")).double()
    logits = network(x)
    by_hand = -np.mean(
        [float(torch.log_softmax(logits[row], dim=0)[y[row]].detach()) for row in range(10)]
    )
    assert float(torch.nn.functional.cross_entropy(logits, y)) == pytest.approx(by_hand)
    assert [type(layer).__name__ for layer in network] == [
        "Linear",
        "ReLU",
        "Linear",
        "ReLU",
        "Linear",
    ]
    assert torch.autograd.gradcheck(
        lambda inputs: torch.nn.functional.cross_entropy(network(inputs), y),
        (x.clone().requires_grad_(True),),
    )


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
    model = fitters()[name](name, fit_data(train, dev), CONFIG)
    assert model.scores(test).shape == (200, k)
    assert accuracy(model.scores(test), test.labels) > 0.6 + 0.4 / k  # chance: 1 / k
    assert model.selection
    assert all(np.all(np.isfinite(value)) for value in model.arrays().values())


@pytest.mark.parametrize("k", [4, 2])
def test_text_models_and_rules_score_k_options(k):
    train, dev, test = (linked_problem(n, seed=s, k=k) for n, s in ((100, 0), (50, 1), (50, 2)))
    for name in ("Text-FFNN", "Bigram LM"):
        assert fitters()[name](name, fit_data(train, dev), CONFIG).scores(test).shape == (50, k)
    for rule in TEXT_RULES:
        assert rule.scores(test).shape == (50, k)
    hubs = hub_scores(np.array([[1.0, 0.3], [0.3, 1.0]]))
    np.testing.assert_allclose(hubs, [0.3, 0.3])  # two options: each one's similarity to the other


def test_text_model_never_looks_at_the_image():
    train, dev, test = (linked_problem(n, seed=s) for n, s in ((200, 0), (50, 1), (50, 2)))
    model = fitters()["Text-FFNN"]("Text-FFNN", fit_data(train, dev), CONFIG)
    blind = Batch(np.zeros_like(test.images), test.options, test.text, test.labels, test.texts)
    np.testing.assert_array_equal(model.scores(test), model.scores(blind))
    image_model = fitters()["FFNN"]("FFNN", fit_data(train, dev), CONFIG)
    assert not np.array_equal(image_model.scores(test), image_model.scores(blind))
