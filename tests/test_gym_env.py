"""The Gymnasium environment: it passes Gymnasium's own checker, is made by id, and is the episode engine underneath
(same observations, refusals and scores)."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from gf01_formal.instances.io import instance_problem, load_bundle
from gf01_formal.play.episode import Episode
from gf01_formal.play.gym_env import ENV_ID, SET_0, SET_1, UNCHANGED, GF01Env
from gf01_formal.scoring.certificates import certificate_from_json
from gf01_formal.scoring.scores import Scorer
from gf01_formal.scoring.values import NOT_RUN


@pytest.fixture(scope="module")
def bundle(generated_bundle):
    path = generated_bundle(4, 4, {"horizon": [5, 9]})
    return path, load_bundle(path)


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
        problem = instance_problem(inst)
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


# -- a bundle: an instance drawn at each reset, vector environments, the training mode ------------------------------


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory, generated_bundle):
    """A 16-instance bundle of mixed sizes, split by the public key."""
    from gf01_formal.instances.io import save_artifact
    from gf01_formal.instances.splits import PUBLIC_KEY, split_bundle

    cfg = {"families": [{"kind": "random_mealy", "states": [3, 6], "inputs": [2, 4], "outputs": [1, 3]}],
           "horizon": [5, 12]}
    b, _ = split_bundle(load_bundle(generated_bundle(8, 16, cfg)), PUBLIC_KEY)
    path = tmp_path_factory.mktemp("gym16") / "bundle.json"
    save_artifact(path, b)
    return path, b


def test_a_bundle_env_draws_an_instance_per_seed_and_passes_the_checker(sixteen):
    path, b = sixteen
    env = gymnasium.make(ENV_ID, bundle=str(path), disable_env_checker=True)
    check_env(env.unwrapped, skip_render_check=True)
    drawn = {env.reset(seed=s)[1]["instance_id"] for s in range(40)}
    assert len(drawn) >= 8 and drawn <= {i.instance_id for i in b.instances}
    assert env.reset(seed=5)[1]["instance_id"] == env.reset(seed=5)[1]["instance_id"]  # the seed decides
    T = max(len(i.base_trace) for i in b.instances)
    n = max(len(i.system.inputs) for i in b.instances)
    assert env.observation_space["certificate"].shape == (T, n) and env.action_space.shape == (n,)
    small = min(b.instances, key=lambda i: len(i.system.inputs))
    obs, info = env.reset(options={"instance_id": small.instance_id})
    k = len(small.system.inputs)
    assert obs["horizon"] == len(small.base_trace) and list(obs["inputs"]) == [1] * k + [0] * (n - k)
    # Positions past the instance's inputs are ignored: the oracle's actions, padded with edits, still score 1.
    actions = _oracle_actions(small)
    for t in range(len(small.base_trace)):
        obs, reward, done, _, info = env.step(np.concatenate([actions[t], np.full(n - k, SET_1)]))
    assert done and reward == 1.0 and info["result"]["valid"]


def test_a_vector_env_over_the_bundle_runs_many_instances(sixteen):
    path, _ = sixteen
    envs = gymnasium.make_vec(ENV_ID, num_envs=4, vectorization_mode="sync", bundle=str(path))
    obs, info = envs.reset(seed=11)
    assert len(set(info["instance_id"])) > 1 and obs["certificate"].shape[0] == 4
    rng = np.random.Generator(np.random.PCG64(0))
    finished = 0
    for _ in range(60):  # past the longest episode: every copy finishes and starts again on another draw
        obs, reward, done, truncated, info = envs.step(rng.integers(0, 3, size=envs.action_space.shape))
        assert envs.observation_space.contains(obs) and not truncated.any()
        assert set(reward.tolist()) <= {0.0, 1.0} and not reward[~done].any()  # Score_C, on the last step only
        finished += int(done.sum())
    assert finished >= 4
    envs.close()
    _, b = sixteen
    split = b.instances[0].split_id
    ids = {i.instance_id for i in b.instances if i.split_id == split}
    sync = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make(ENV_ID, bundle=str(path), split=split)
                                           for _ in range(2)])
    for seed in range(5):
        _, info = sync.reset(seed=seed)
        assert set(info["instance_id"]) <= ids  # the split's instances only
    sync.close()


def test_the_training_mode_skips_only_the_best_match(sixteen):
    path, _ = sixteen
    exact = GF01Env(bundle=path)
    cheap = GF01Env(bundle=path, scoring="valid")
    rng = np.random.Generator(np.random.PCG64(4))
    for seed in range(8):
        _, i1 = exact.reset(seed=seed)
        _, i2 = cheap.reset(seed=seed)
        assert i1["instance_id"] == i2["instance_id"]
        done = False
        while not done:
            action = rng.integers(0, 3, size=exact.action_space.shape)
            _, r1, done, _, f1 = exact.step(action)
            _, r2, _, _, f2 = cheap.step(action)
            assert r1 == r2
        assert f2["result"] == {k: f1["result"][k] for k in f2["result"]}
        assert set(f1["result"]) - set(f2["result"]) >= {"ap_f1", "ts_f1", "best_match_gold"}
        assert "ap_f1" not in f2["result"] and f2["result"]["score_c"] == f1["result"]["score_c"]


def test_bad_bundle_options_are_refused(sixteen):
    from hoa.errors import Gf01Error

    path, _ = sixteen
    with pytest.raises(Gf01Error, match="no instance of split 'holdout'"):
        GF01Env(bundle=path, split="holdout")
    with pytest.raises(Gf01Error, match="scoring"):
        GF01Env(bundle=path, scoring="fast")
    with pytest.raises(Gf01Error, match="give one of"):
        GF01Env(path, bundle=path)
    with pytest.raises(Gf01Error, match="not in this environment"):
        GF01Env(bundle=path).reset(options={"instance_id": "gf01f-nope"})


@pytest.mark.parametrize("order", ["gf01_formal first", "gymnasium first"])
def test_importing_the_package_registers_the_id_without_importing_gymnasium(bundle, order):
    """Issue 31: ``gymnasium.make("gf01/GF01-v0")`` after ``import gf01_formal`` (in a fresh interpreter, either
    import first), and the package alone never imports Gymnasium."""
    import subprocess
    import sys

    path, _ = bundle
    first, second = ("gf01_formal", "gymnasium") if order == "gf01_formal first" else ("gymnasium", "gf01_formal")
    code = (f"import sys\nimport {first}\n"
            "alone = 'gymnasium' in sys.modules\n"
            f"import {second}\nimport gymnasium\n"
            f"env = gymnasium.make('gf01/GF01-v0', bundle={str(path)!r})\n"
            "obs, info = env.reset(seed=0)\n"
            "print(alone, type(env.unwrapped).__name__, 'goal' in info or bool(obs))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                          cwd=path.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    alone, name, _ = proc.stdout.split()
    assert name == "GF01Env" and alone == ("True" if order == "gymnasium first" else "False")
