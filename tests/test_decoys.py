import numpy as np

from transforms.strategies.mcic import by_score
from transforms.strategies.scoring import score


def test_score_is_zero_at_and_above_the_surface_limit():
    sim_pv = np.array([0.8, 0.8, 0.8, -0.9])
    sim_surf = np.array([0.49, 0.5, 0.7, 0.1])
    np.testing.assert_allclose(
        score(sim_pv, sim_surf, lam=0.3, limit=0.5),
        [0.3 * 0.8 + 0.7 * 0.49, 0.0, 0.0, 0.3 * -0.9 + 0.7 * 0.1],
    )


def test_lambda_one_is_pure_pv_and_zero_is_pure_surface():
    sim_pv, sim_surf = np.array([0.6]), np.array([0.2])
    assert score(sim_pv, sim_surf, lam=1.0, limit=0.5)[0] == 0.6
    assert score(sim_pv, sim_surf, lam=0.0, limit=0.5)[0] == 0.2


def test_algorithm_1_prefers_by_score_and_breaks_ties_by_lower_caption_row():
    scores = np.array([0.3, 0.5, 0.3, 0.3, 0.5, 0.0, -0.1])
    candidates = np.array([40, 30, 10, 20, 35, 1, 2])
    assert candidates[by_score(scores, candidates)].tolist() == [30, 35, 10, 20, 40]


def test_non_positive_scores_and_missing_candidates_are_never_preferred():
    scores = np.array([0.9, 0.8, 0.7, 0.0, -0.5])
    assert by_score(scores, np.array([5, -1, 7, 8, 9])).tolist() == [0, 2]
