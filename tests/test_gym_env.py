"""The Gymnasium environment: it passes Gymnasium's own checker, is made by id, and is the episode engine underneath
(same observations, refusals and scores)."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from gf01_formal.instances.generator import GenConfig, generate
from gf01_formal.instances.io import check_instance, save_artifact
from gf01_formal.play.episode import Episode
from gf01_formal.play.gym_env import ENV_ID, SET_0, SET_1, UNCHANGED, GF01Env
from gf01_formal.scoring.certificates import certificate_from_json
from gf01_formal.scoring.scores import Scorer
from gf01_formal.scoring.values import NOT_RUN


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    b = generate(4, 4, GenConfig(horizon=[5, 9]))
    path = tmp_path_factory.mktemp("gym") / "bundle.json"
    save_artifact(path, b)
    return path, b


def _oracle_actions(inst):
    """The oracle certificate as one MultiDiscrete action per step."""
    names = inst.system.inputs
    actions = np.full((len(inst.base_trace), len(names)), UNCHANGED, dtype=np.int64)
    for t, name, v in inst.certification.oracle_certificate:
        actions[t, names.index(name)] = SET_1 if v else SET_0
    return actions


def test_it_passes_the_gymnasium_env_checker(bundle):
    path, b = bundle
    for inst in b.instances[:2]:
        env = gymnasium.make(ENV_ID, instance=path, instance_id=inst.instance_id, render_mode="ansi",
                             disable_env_checker=True)
        check_env(env.unwrapped, skip_render_check=False)


def test_make_by_id_plays_the_oracle_certificate_to_reward_1(bundle):
    path, b = bundle
    inst = b.instances[0]
    env = gymnasium.make(f"gf01_formal.play.gym_env:{ENV_ID}", instance=str(path), instance_id=inst.instance_id)
    obs, info = env.reset(seed=1)
    assert obs["t"] == -1 and info["goal"]["horizon"] == len(inst.base_trace)
    assert obs["b_T_rem"] == inst.budget_t and not obs["certificate"].any()
    rewards, done, t = [], False, 0
    actions = _oracle_actions(inst)
    while not done:
        obs, reward, done, truncated, info = env.step(actions[t])
        rewards.append(reward)
        assert not truncated and obs["t"] == t
        t += 1
    assert t == len(inst.base_trace) and rewards[:-1] == [0.0] * (t - 1) and rewards[-1] == 1.0
    assert info["result"]["score_c"] == 1 and info["result"]["valid"]
    assert (obs["certificate"] != UNCHANGED).sum() == len(inst.certification.oracle_certificate)
    env.close()


def test_observations_are_the_episode_engines(bundle):
    """Random actions through the environment and the same assignments through an Episode agree step by step."""
    _, b = bundle
    rng = np.random.Generator(np.random.PCG64(3))
    for inst in b.instances:
        problem = check_instance(inst)
        env = GF01Env((inst, problem))
        ep = Episode(problem, inst.instance_id)
        env.reset()
        ep.reset()
        names = inst.system.inputs
        done = False
        while not done:
            action = rng.integers(0, 3, size=len(names))
            obs, reward, done, _, info = env.step(action)
            ref = ep.step({n: int(a) - 1 for n, a in zip(names, action, strict=True) if a != UNCHANGED})
            assert obs["t"] == ref.t and list(obs["y"]) == [ref.y[o] for o in inst.system.outputs]
            assert list(obs["effect_status"]) == [ref.effect_status.holds, ref.effect_status.in_window,
                                                  ref.effect_status.achieved]
            assert (obs["b_T_rem"], obs["b_A_rem"]) == (ref.b_T_rem, ref.b_A_rem)
            assert info["refused"] == [r.model_dump(mode="json") for r in ref.refused]
            cert = certificate_from_json(ref.certificate, names, problem.horizon)
            assert sorted((t, i, int(obs["certificate"][t, i]) - 1) for t, i in zip(*np.nonzero(obs["certificate"]),
                                                                                     strict=True)) == sorted(cert)
        assert info["result"] == {**Scorer(problem).score(ep.certificate).to_json(), **NOT_RUN.to_json()}
        assert reward == float(info["result"]["score_c"])


def test_bad_actions_and_bad_instances_are_refused(bundle):
    path, b = bundle
    env = GF01Env(path, b.instances[0].instance_id, render_mode="ansi")
    env.reset()
    assert '"horizon"' in env.render()
    n = len(b.instances[0].system.inputs)
    for bad in (np.full(n, 3), np.zeros(n + 1, dtype=np.int64), np.full(n, 0.5)):
        with pytest.raises(ValueError, match="not in"):
            env.step(bad)
    env.step(np.zeros(n, dtype=np.int64))
    assert '"type":"observation"' in env.render()
    from hoa.errors import Gf01Error

    with pytest.raises(Gf01Error, match="pick one with --id"):
        GF01Env(path)
    with pytest.raises(Gf01Error, match="cannot read"):
        GF01Env(Path(path).with_name("missing.json"))
