import numpy as np

from transforms.decoys import score, select_decoys


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


def test_selection_sorts_by_score_and_breaks_ties_by_lower_caption_row():
    scores = np.array([0.3, 0.5, 0.3, 0.3, 0.5, 0.0, -0.1])
    candidates = np.array([40, 30, 10, 20, 35, 1, 2])
    positions = select_decoys(scores, candidates)
    assert candidates[positions].tolist() == [30, 35, 10, 20]


def test_fewer_than_four_positive_scores_drops_the_instance():
    scores = np.array([0.5, 0.4, 0.3, 0.0, -0.2])
    assert select_decoys(scores, np.arange(5)) is None


def test_missing_candidates_are_never_chosen():
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    assert select_decoys(scores, np.array([5, -1, 7, 8, 9])).tolist() == [0, 2, 3, 4]
    assert select_decoys(scores, np.array([5, -1, -1, 8, 9])) is None
