"""The Python package against the engine: same answers as the CLI's JSON, dicts and
files alike, clear errors, sweeps as DataFrames, reports, and a Ray sweep on a local
instance (127.0.0.1) equal to the single-process one."""

import json
import os
import pathlib
import re

import pytest

import myriad

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUPERPOD = ROOT / "examples" / "dgx-superpod-h100.yaml"
SWEEP = ROOT / "examples" / "sweep" / "oversubscription.yaml"


def test_cluster_from_a_dict_counts_the_superpod_switches():
    s = {
        "format": "myriad/1",
        "cluster": {
            "accelerator": "h100-sxm",
            "count": 1024,
            "scale_up": "hgx-h100",
            "scale_out": {"fabric": "infiniband-ndr", "topology": "fat-tree", "tiers": 2},
        },
    }
    c = myriad.cluster(s)
    # 1,024 NDR ports on 64-port switches, non-blocking: 32 leaves, 16 spines.
    assert c["switches"] == {"leaf": 32, "spine": 16}
    assert c["accelerators"] == 1024


def test_train_returns_the_cli_object_and_is_deterministic():
    t = myriad.train(SUPERPOD)
    assert t["format"] == "myriad-train/1"
    assert t["fits"] is True
    b = t["breakdown"]
    total = sum(v for k, v in b.items() if k.endswith("_s"))
    assert abs(total - t["step_time_s"]) < 1e-9 * t["step_time_s"]
    assert 0.2 < t["mfu"] < 0.8
    assert myriad.train(str(SUPERPOD)) == t


def test_train_from_a_dict_equals_train_from_the_file():
    s = {
        "format": "myriad/1",
        "name": "dict",
        "cluster": {"accelerator": "h100-sxm", "count": 64, "scale_up": "hgx-h100"},
        "model": {"preset": "llama3-8b"},
        "training": {"tp": 1, "pp": 1, "dp": 64, "global_batch": 512, "micro_batch": 1},
    }
    p = ROOT / "target" / "py-test-scenario.json"
    p.parent.mkdir(exist_ok=True)
    p.write_text(json.dumps(s))
    a, b = myriad.train(s), myriad.train(p)
    assert a == b
    assert a["plan"]["dp"] == 64


def test_bad_input_raises_a_clear_error():
    s = {"format": "myriad/1", "cluster": {"accelerator": "h100-sxm", "count": 1001}}
    with pytest.raises(ValueError, match=r"cluster\.count: 1001 does not fill whole scale-up domains of 8"):
        myriad.cluster(s)
    with pytest.raises(ValueError, match="compare"):
        myriad.reliability(SUPERPOD, compare=["nope"])


def test_search_ranks_plans_fastest_first():
    r = myriad.search(SUPERPOD, top=5)
    times = [p["step_time_s"] for p in r["top"]]
    assert len(times) == 5 and times == sorted(times)
    assert r["feasible"] <= r["evaluated"] <= r["space"]


def test_sweep_is_a_dataframe_and_shards_partition_it():
    df = myriad.sweep(SWEEP)
    assert len(df) == 8
    assert "step_time_s" in df.columns
    a = myriad.sweep(SWEEP, shard=(1, 2))
    b = myriad.sweep(SWEEP, shard=(2, 2))
    assert len(a) + len(b) == 8
    assert sorted(list(a.iloc[:, 0]) + list(b.iloc[:, 0])) == list(df.iloc[:, 0])


def test_serve_obeys_littles_law_roughly_and_is_seeded():
    a = myriad.serve(ROOT / "examples" / "serve-llama3-70b-h100.yaml", requests=2000, seed=3)
    b = myriad.serve(ROOT / "examples" / "serve-llama3-70b-h100.yaml", requests=2000, seed=3)
    assert a == b
    r = a["result"]
    assert r["completed"] == 2000
    assert 0 < r["ttft"]["p50"] <= r["ttft"]["p99"]


def test_serve_closed_loop_sweeps_its_clients():
    v = myriad.serve(ROOT / "examples" / "serve-llama3-70b-h100-concurrency.yaml", requests=2000)
    # 64 clients keep at most 64 requests in flight; the sweep runs 1 to 128 clients.
    assert v["result"]["mean_in_system"] <= 64 + 1e-9
    sweep = v["concurrency_sweep"]
    assert [p["clients"] for p in sweep] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert sweep[-1]["output_tokens_per_s_per_accelerator"] > sweep[0]["output_tokens_per_s_per_accelerator"]
    assert sweep[-1]["per_user_output_tokens_per_s"] < sweep[0]["per_user_output_tokens_per_s"]


def test_sched_compares_policies_and_replays_openb():
    v = myriad.sched(ROOT / "examples" / "sched-nvl72-mixed.yaml", policies=["fifo", "backfill"])
    names = [p["policy"]["name"] for p in v["policies"]]
    assert names == ["fifo", "backfill"]
    # Backfill never makes the mean wait longer than FIFO on the same jobs.
    w = {p["policy"]["name"]: p["all"]["wait_s"]["mean"] for p in v["policies"]}
    assert w["backfill"] <= w["fifo"]
    with pytest.raises(ValueError, match="did you mean backfill"):
        myriad.sched(ROOT / "examples" / "sched-nvl72-mixed.yaml", policies=["backfil"])


def test_collective_ring_all_reduce_matches_the_closed_form_bound():
    # One DGX H100 on NVLink: a large all-reduce's bus bandwidth stays under the 450 GB/s
    # per-direction line rate, and time grows with size.
    c = myriad.collective(SUPERPOD, "all-reduce", sweep="1MiB..1GiB", group="0-7", algorithm="ring")
    pts = c["points"]
    assert c["group_size"] == 8
    assert all(p["busbw_gbps"] < 450 for p in pts)
    assert [p["time_s"] for p in pts] == sorted(p["time_s"] for p in pts)
    one = myriad.collective(SUPERPOD, "all-reduce", bytes=1 << 30, group="0-7", algorithm="ring")
    assert abs(one["time_s"] - pts[-1]["time_s"]) < 1e-12


def test_report_is_html_with_charts():
    html = myriad.report("train", myriad.train(SUPERPOD))
    assert html.startswith("<!doctype html>")
    assert html.count('<figure class="chart"') == 3


def test_ray_sweep_on_a_local_instance_equals_the_single_process_sweep():
    pytest.importorskip("ray")
    import myriad.ray

    df = myriad.ray.sweep(
        SWEEP,
        shards=3,
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
    )
    single = myriad.sweep(SWEEP)
    assert df.equals(single), (df, single)


def test_serve_refuses_more_requests_than_a_simulation_takes():
    # As the CLI's --requests: a clear error, not a failed allocation aborting Python.
    with pytest.raises(ValueError, match=r"requests: 1000000000000 is more than the 10000000"):
        myriad.serve(ROOT / "examples" / "serve-llama3-70b-h100.yaml", requests=10**12)
    with pytest.raises(ValueError, match=r"requests: must be at least 1"):
        myriad.serve(ROOT / "examples" / "serve-llama3-70b-h100.yaml", requests=0)


def test_sched_reads_an_empty_scenario_file_as_the_cli_does(tmp_path):
    # An empty file is a scenario that fails to parse (naming the file), not "no scenario":
    # with an openb directory it was silently dropped and the trace replayed alone.
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.yaml: \(document\): invalid type: null"):
        myriad.sched(empty)
    with pytest.raises(ValueError, match=r"empty\.yaml"):
        myriad.sched(empty, openb=tmp_path)


def test_search_takes_the_clis_global_batch_text_and_refuses_non_positive_batches():
    node = {
        "format": "myriad/1",
        "cluster": {"accelerator": "h100-sxm", "count": 8, "scale_up": "hgx-h100"},
        "model": {"preset": "llama3-8b"},
        "training": {"global_batch": 64, "micro_batch": 1},
    }
    listed = myriad.search(node, top=3, global_batch=[64, 128])
    # A string was iterated character by character: "64,128" searched batches 6, 4, 1, 2, 8
    # (or failed on the comma), "1024" searched 1, 0, 2 and 4.
    assert myriad.search(node, top=3, global_batch="64,128")["top"] == listed["top"]
    assert myriad.search(node, top=3, global_batch="64..128")["top"] == listed["top"]
    one = myriad.search(node, top=3, global_batch=128)
    assert {p["plan"]["global_batch"] for p in one["top"]} == {128}
    for bad in ([0], [], "0", [-64], "64..32", "x"):
        with pytest.raises(ValueError, match="global_batch"):
            myriad.search(node, top=3, global_batch=bad)


def test_reliability_compare_and_sched_policies_take_the_clis_text():
    # A string was iterated character by character: compare="size" failed on `s`, and
    # policies="fifo" on `f` being given twice.
    rel = ROOT / "examples" / "reliability-llama3.yaml"
    listed = myriad.reliability(rel, replicas=20, compare=["size", "checkpoint"])
    assert myriad.reliability(rel, replicas=20, compare="size,checkpoint") == listed
    assert myriad.reliability(rel, replicas=20, compare=["size", "size", "checkpoint"]) == listed
    every = myriad.reliability(rel, replicas=20, compare="all")
    assert set(every["compare"]) == {"size", "domain", "checkpoint"}
    with pytest.raises(ValueError, match="compare: `nope`"):
        myriad.reliability(rel, replicas=20, compare="size,nope")
    mixed = ROOT / "examples" / "sched-nvl72-mixed.yaml"
    one = myriad.sched(mixed, policies="fifo")
    assert [p["policy"]["name"] for p in one["policies"]] == ["fifo"]
    two = myriad.sched(mixed, policies="fifo, backfill")
    assert two == myriad.sched(mixed, policies=["fifo", "backfill"])


def test_a_dict_value_json_cannot_hold_is_an_error_naming_its_field():
    # json.dumps wrote NaN/Infinity, which the parser refused as "invalid JSON at line 1
    # column 85", a place in text the caller never saw.
    s = {
        "format": "myriad/1",
        "cluster": {"accelerator": "h100-sxm", "count": 64, "scale_up": "hgx-h100"},
        "model": {"preset": "llama3-8b"},
        "training": {"global_batch": 512, "micro_batch": 1, "tokens": 1e12},
    }
    for bad in (float("nan"), float("inf"), -float("inf")):
        s["training"]["tokens"] = bad
        with pytest.raises(ValueError, match=r"^<dict>: training\.tokens: -?(nan|inf) is not a finite number"):
            myriad.train(s)
    s["training"]["tokens"] = 1e12
    s["cluster"]["fabrics"] = [{"x": {1, 2}}]
    with pytest.raises(TypeError, match=r"^<dict>: cluster\.fabrics\[0\]\.x: a set is not a JSON value"):
        myriad.cluster(s)
    with pytest.raises(ValueError, match=r"^result: step_time_s: nan"):
        myriad.report("train", {"step_time_s": float("nan")})
    np = pytest.importorskip("numpy")
    # numpy's numbers (a DataFrame's cells) are numbers.
    s["cluster"] = {"accelerator": "h100-sxm", "count": np.int64(64), "scale_up": "hgx-h100"}
    s["training"]["tokens"] = np.float64(1e12)
    assert myriad.train(s)["accelerators"] == 64


def test_a_numpy_bool_in_a_dict_is_a_bool():
    # A DataFrame's bool cell (numpy.bool_) is neither bool nor numbers.Real: it was
    # refused as "a bool is not a JSON value (str, number, bool, ...)".
    np = pytest.importorskip("numpy")
    s = {
        "format": "myriad/1",
        "cluster": {"accelerator": "h100-sxm", "count": 64, "scale_up": "hgx-h100"},
        "model": {"preset": "llama3-8b"},
        "training": {"tp": 2, "global_batch": 512, "micro_batch": 1},
    }
    for v in (True, False):
        s["training"]["sequence_parallel"] = v
        want = myriad.train(s)
        assert want["plan"]["sequence_parallel"] is v
        s["training"]["sequence_parallel"] = np.bool_(v)
        assert myriad.train(s) == want


def test_a_missing_file_is_a_file_not_found_error_naming_it(tmp_path):
    # Scenario files already were (Python's open); the sweep spec, an openb directory's
    # files and a serving trace were ValueErrors.
    with pytest.raises(FileNotFoundError) as e:
        myriad.sweep(tmp_path / "nope.yaml")
    assert e.value.filename == str(tmp_path / "nope.yaml")
    with pytest.raises(FileNotFoundError) as e:
        myriad.sched(openb=tmp_path / "nope")
    assert e.value.filename == str(tmp_path / "nope" / "openb_node_list_all_node.csv")
    s = tmp_path / "serve.yaml"
    s.write_text(
        (ROOT / "examples" / "serve-llama3-70b-h100.yaml").read_text()
        + "\n# a trace beside the scenario that is not there\n"
    )
    text = s.read_text()
    assert "\nserving:" in text
    s.write_text(text.replace("\nserving:", "\nserving:\n  trace: missing.csv", 1))
    with pytest.raises(FileNotFoundError) as e:
        myriad.serve(s, requests=10)
    assert e.value.filename == str(tmp_path / "missing.csv")


def test_a_bytes_path_is_a_path():
    # os.fspath passed bytes through to the engine: "'bytes' object is not an instance of
    # 'str'".
    t = myriad.train(os.fsencode(SUPERPOD))
    assert t == myriad.train(SUPERPOD)
    assert myriad.sweep(os.fsencode(SWEEP)).equals(myriad.sweep(SWEEP))
    mixed = myriad.sched(os.fsencode(ROOT / "examples" / "sched-nvl72-mixed.yaml"), policies="fifo")
    assert mixed["policies"][0]["policy"]["name"] == "fifo"


def test_ray_sweep_types_columns_from_every_row_as_the_single_process_sweep(tmp_path):
    pytest.importorskip("ray")
    import myriad.ray

    # Rows 1 and 3 fail (a global batch of 1000 fills no whole micro-batches), so with two
    # shards one shard's `error` column is all empty (float) and the other's text: merged
    # as DataFrames, `error` was object, not the single sweep's string column.
    spec = tmp_path / "mixed.yaml"
    spec.write_text(
        "format: myriad-sweep/1\n"
        f"base: {SUPERPOD}\n"
        "vary:\n"
        "  training.micro_batch: [1, 2]\n"
        "  training.global_batch: [1536, 1000]\n"
    )
    single = myriad.sweep(spec)
    assert single["error"].isna().tolist() == [True, False, True, False]
    df = myriad.ray.sweep(
        spec,
        shards=2,
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
    )
    assert df.equals(single), (df.dtypes, single.dtypes)


def test_negative_counts_and_seeds_are_value_errors_naming_the_range():
    # pyo3 raised OverflowError("can't convert negative int to unsigned"), naming nothing.
    rel = ROOT / "examples" / "reliability-llama3.yaml"
    srv = ROOT / "examples" / "serve-llama3-70b-h100.yaml"
    u64 = (1 << 64) - 1
    cases = [
        (lambda: myriad.search(SUPERPOD, top=-1), rf"^top: -1 is not an integer from 1 to {u64}$"),
        (lambda: myriad.search(SUPERPOD, top=1 << 64), rf"^top: {1 << 64} is not an integer from 1 to {u64}$"),
        (lambda: myriad.reliability(rel, seed=-1), rf"^seed: -1 is not an integer from 0 to {u64}$"),
        (lambda: myriad.reliability(rel, seed=1 << 64), rf"^seed: {1 << 64} is not an integer"),
        (lambda: myriad.reliability(rel, replicas=-1), r"^replicas: -1 is not an integer from 1 to 1000000$"),
        (lambda: myriad.reliability(rel, replicas=1 << 32), rf"^replicas: {1 << 32} is not an integer from 1 to 1000000$"),
        (lambda: myriad.serve(srv, seed=-1, requests=10), rf"^seed: -1 is not an integer from 0 to {u64}$"),
        (lambda: myriad.serve(srv, requests=-1), r"^requests: -1 is not an integer from 1 to 10000000$"),
        (lambda: myriad.sched(ROOT / "examples" / "sched-nvl72-mixed.yaml", seed=-5), r"^seed: -5 is not an integer"),
    ]
    for call, want in cases:
        with pytest.raises(ValueError, match=want):
            call()
    # Inside the type, the engine's own range checks as before.
    with pytest.raises(ValueError, match=r"^replicas: must be at least 1"):
        myriad.reliability(rel, replicas=0)
    with pytest.raises(TypeError, match=r"^top: 2\.5 is not an integer"):
        myriad.search(SUPERPOD, top=2.5)


def test_ray_sweep_refuses_a_negative_shard_count():
    pytest.importorskip("ray")
    import myriad.ray

    # -1 shards made no tasks and failed on the merge: "list index out of range".
    with pytest.raises(ValueError, match=r"^shards: -1 is not an integer from 1 to"):
        myriad.ray.sweep(SWEEP, shards=-1)


def test_sweep_takes_the_clis_shard_text():
    # `shard="1/2"` was unpacked as a sequence: "too many values to unpack (expected 2)".
    # Shard k of n holds the 0-based rows k - 1, k - 1 + n, ... (as sweep_csv says).
    assert list(myriad.sweep(SWEEP, shard=(2, 3))["row"]) == [1, 4, 7]
    a = myriad.sweep(SWEEP, shard="1/2")
    assert a.equals(myriad.sweep(SWEEP, shard=(1, 2)))
    assert myriad.sweep(SWEEP, shard=" 2 / 2 ").equals(myriad.sweep(SWEEP, shard=(2, 2)))
    for bad in ("1", "0/2", "3/2", "x/2", "1/0", "-1/2", "", (1,), (1, 2, 3), (-1, 2), (0, 2), (1, -2)):
        with pytest.raises(ValueError, match=r"^shard: ") as e:
            myriad.sweep(SWEEP, shard=bad)
        assert "--shard" not in str(e.value)
    # The engine's own check (myriad.ray's shards) names the keyword too.
    with pytest.raises(ValueError, match=r"^shard: `3/2`: K must be 1 to 2"):
        myriad._myriad.sweep_csv(str(SWEEP), SWEEP.read_text(), str(SWEEP.parent), 3, 2)


def test_collective_errors_name_the_keywords_not_the_clis_flags():
    # They named --op, --group, --bytes, --sweep, --algorithm; a group the cluster cannot
    # hold named no file.
    one = {"bytes": 1 << 20}
    cases = [
        (dict(one, op="all-redux"), r"^op: `all-redux` is not one of all-reduce"),
        (dict(one, algorithm="nope"), r"^algorithm: `nope` is not one of ring"),
        (dict(one, group="nope"), r"^group: `nope` is not tp, dp"),
        (dict(one, group="0,0"), r"^group: rank 0 is given twice in `0,0`"),
        (dict(one, group="0-99999"), "^" + re.escape(f"{SUPERPOD}: group: rank 99999 is outside the cluster's 1024 accelerators")),
        (dict(one, group="5000"), "^" + re.escape(f"{SUPERPOD}: group: rank 5000 is outside")),
        ({"bytes": "1XB"}, r"^bytes: `1XB` is not a size"),
        ({"bytes": -1}, r"^bytes: `-1` is not a size"),
        ({"sweep": "1B..x"}, r"^sweep: `x` is not a size"),
        ({"sweep": "1KiB"}, r"^sweep: `1KiB` is not a range"),
        ({"sweep": "1KiB..1B"}, r"^sweep: `1KiB..1B` runs from"),
        ({}, r"^give bytes \(a size\) or sweep \(FROM\.\.TO\)$"),
        ({"bytes": 1, "sweep": "1B..2B"}, r"^bytes 1 and sweep 1B\.\.2B: give one size or one range"),
    ]
    for kw, want in cases:
        kw.setdefault("op", "all-reduce")
        with pytest.raises(ValueError, match=want) as e:
            myriad.collective(SUPERPOD, **kw)
        assert "--" not in str(e.value), (kw, e.value)
    bare = {"format": "myriad/1", "cluster": {"accelerator": "h100-sxm", "count": 8}}
    with pytest.raises(ValueError, match=r"^<dict>: group tp: the scenario has no training plan"):
        myriad.collective(bare, "all-reduce", bytes=1, group="tp")


def test_reliability_days_errors_name_the_keyword_not_the_clis_flag():
    # The engine's message named the CLI's `--days` in Python too.
    rel = ROOT / "examples" / "reliability-llama3.yaml"
    for d in (-1, 0):
        with pytest.raises(ValueError, match=rf": days: {d}(\.0)? is not a positive number of days$") as e:
            myriad.reliability(rel, days=d, replicas=2)
        assert "--" not in str(e.value), e.value
    # An int past a float was Python's OverflowError "int too large to convert to float".
    with pytest.raises(ValueError, match=r"^days: 1000+ is not a positive number of days$"):
        myriad.reliability(rel, days=10**400, replicas=2)


def test_sched_policy_errors_name_the_keyword_not_the_clis_flag():
    # The engine's messages named the CLI's `--policies` in Python too.
    mixed = ROOT / "examples" / "sched-nvl72-mixed.yaml"
    for bad, want in (([], "no policy given"), ("fifo,fifo", "`fifo` is given twice"), (["backfil"], "did you mean backfill")):
        with pytest.raises(ValueError, match="^" + re.escape(f"{mixed}: policies: ")) as e:
            myriad.sched(mixed, policies=bad)
        assert want in str(e.value) and "--" not in str(e.value), e.value


def test_a_global_batch_of_bytes_or_past_u64_is_an_error_naming_it():
    node = {
        "format": "myriad/1",
        "cluster": {"accelerator": "h100-sxm", "count": 8, "scale_up": "hgx-h100"},
        "model": {"preset": "llama3-8b"},
        "training": {"global_batch": 64, "micro_batch": 1},
    }
    # b"64" was iterated: the batches 54 and 52 were searched without a word; 2**64 was
    # pyo3's nameless OverflowError "int too big to convert".
    for bad in (b"64", bytearray(b"64"), 1 << 64, [64, 1 << 64]):
        with pytest.raises(ValueError, match=r"^global_batch: "):
            myriad.search(node, top=1, global_batch=bad)
    most = myriad.search(node, top=1, global_batch=(1 << 64) - 1)
    assert most["best"]["plan"]["global_batch"] == (1 << 64) - 1


def test_an_argument_of_the_wrong_type_is_an_error_naming_it():
    # pyo3 named no argument: "must be real number, not str", "'None' is not an instance
    # of 'str'".
    rel = ROOT / "examples" / "reliability-llama3.yaml"
    mixed = ROOT / "examples" / "sched-nvl72-mixed.yaml"
    cases = [
        (lambda: myriad.reliability(rel, days="3", replicas=2), r"^days: '3' is not a number$"),
        (lambda: myriad.reliability(rel, days=True, replicas=2), r"^days: True is not a number$"),
        (lambda: myriad.reliability(rel, replicas=2, compare=["size", 1]), r"^compare: 1 is not a string$"),
        (lambda: myriad.sched(mixed, policies=["fifo", None]), r"^policies: None is not a string$"),
        (lambda: myriad.collective(SUPERPOD, None, bytes=1), r"^op: None is not a string$"),
        (lambda: myriad.collective(SUPERPOD, "all-reduce", bytes=1, group=8), r"^group: 8 is not a string$"),
        (lambda: myriad.collective(SUPERPOD, "all-reduce", bytes=1, algorithm=None), r"^algorithm: None is not a string$"),
        (lambda: myriad.collective(SUPERPOD, "all-reduce", sweep=1024), r"^sweep: 1024 is not a string$"),
        (lambda: myriad.report(None, {}), r"^kind: None is not a string$"),
        (lambda: myriad.report("train", None), r"^result: a NoneType is not a command's result \(a dict\)$"),
        (lambda: myriad.report("train", [1]), r"^result: a list is not a command's result"),
    ]
    for call, want in cases:
        with pytest.raises(TypeError, match=want):
            call()
    # A whole number of days is a number of days.
    a = myriad.reliability(rel, days=3, replicas=2)
    assert a == myriad.reliability(rel, days=3.0, replicas=2)
    assert a["days"] == 3.0


def test_the_module_docstring_examples_print_what_they_show(monkeypatch):
    # They are skipped by doctest (their paths are the repository's): the step time shown,
    # 8.21 s, was stale beside the 8.89 s the superpod's train gives.
    import doctest

    monkeypatch.chdir(ROOT)
    text = myriad.__doc__.replace("# doctest: +SKIP", "")
    test = doctest.DocTestParser().get_doctest(text, {}, "myriad", None, 0)
    assert len(test.examples) == 5
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.failures == 0


def test_a_serve_report_charts_latency_against_load_as_the_clis(tmp_path):
    # The CLI's --report adds the points at 25% to 150% of the arrival rate; a report of
    # myriad.serve's result had no way to get them and lacked those charts.
    srv = ROOT / "examples" / "serve-llama3-70b-h100.yaml"
    cli = ROOT / "target" / "release" / "myriad"
    v = myriad.serve(srv, requests=300, load_sweep=True)
    assert [round(p["rate"] / v["load_sweep"][3]["rate"], 2) for p in v["load_sweep"]] == [0.25, 0.5, 0.75, 1.0, 1.25, 1.5]
    plain = myriad.serve(srv, requests=300)
    assert "load_sweep" not in plain and {k: x for k, x in v.items() if k != "load_sweep"} == plain
    html = myriad.report("serve", v)
    assert len(html) > len(myriad.report("serve", plain))
    if cli.exists():
        import subprocess

        out = tmp_path / "serve.html"
        subprocess.run([str(cli), "serve", str(srv), "--requests", "300", "--report", str(out)], check=True, capture_output=True)
        assert out.read_text() == html


def test_a_trace_that_is_not_utf8_is_a_value_error_naming_it(tmp_path):
    # It was an OSError with no errno and no filename (a read of the scenario file itself
    # that is not UTF-8 is Python's UnicodeDecodeError, a ValueError).
    s = tmp_path / "serve.yaml"
    text = (ROOT / "examples" / "serve-llama3-70b-h100.yaml").read_text()
    assert "\nserving:" in text
    s.write_text(text.replace("\nserving:", "\nserving:\n  trace: t.csv", 1))
    (tmp_path / "t.csv").write_bytes(b"0,100,10\n0.5,100,10\xff\n")
    with pytest.raises(ValueError, match="^" + re.escape(f"{tmp_path / 't.csv'}: cannot read: stream did not contain valid UTF-8")):
        myriad.serve(s, requests=2)
    (tmp_path / "t.csv").write_bytes(b"0,100,10\n0.5,100,10\n")
    assert myriad.serve(s, requests=2)["result"]["completed"] == 2



def test_bad_input_is_a_myriad_error_a_value_error_documented_in_the_module():
    # One class to catch the engine's refusals by, apart from Python's own ValueErrors.
    assert issubclass(myriad.Error, ValueError)
    assert myriad.Error.__module__ == "myriad"
    assert "myriad.Error" in myriad.__doc__
    bad = {"format": "myriad/1", "cluster": {"accelerator": "h100-sxm", "count": 1001}}
    with pytest.raises(myriad.Error, match=r"^<dict>: cluster\.count: 1001 does not fill"):
        myriad.cluster(bad)
    with pytest.raises(myriad.Error, match=r"cluster\.cont: unknown key; did you mean count\?"):
        myriad.train({"format": "myriad/1", "cluster": {"accelerator": "h100-sxm", "cont": 8}})
    # The package's own checks of keyword values raise it too.
    with pytest.raises(myriad.Error, match="seed: -1"):
        myriad.serve(SUPERPOD, seed=-1)
    with pytest.raises(myriad.Error, match="shard"):
        myriad.sweep(SWEEP, shard="0/2")
    with pytest.raises(myriad.Error, match="global_batch"):
        myriad.search(SUPERPOD, global_batch=0)


def test_arguments_of_the_wrong_type_or_range_name_their_keyword():
    # A scenario that is neither a path nor a dict was os.fsdecode's nameless TypeError; a
    # compare or policies that is not a string or a list was "'int' object is not
    # iterable"; bytes=True was a ValueError quoting `True`.
    for bad in (42, None, ["a.yaml"]):
        with pytest.raises(TypeError, match=r"^scenario: a \w+ is not a path \(str or os\.PathLike\) or a dict$"):
            myriad.train(bad)
    with pytest.raises(TypeError, match=r"^spec: a int is not a path"):
        myriad.sweep(3)
    with pytest.raises(TypeError, match=r"^openb: a int is not a path"):
        myriad.sched(openb=3)
    rel = ROOT / "examples" / "reliability-llama3.yaml"
    with pytest.raises(TypeError, match=r"^compare: 3 is not a string or a list of strings$"):
        myriad.reliability(rel, compare=3)
    with pytest.raises(TypeError, match=r"^policies: 3 is not a string or a list of strings$"):
        myriad.sched(ROOT / "examples" / "sched-llama3-islands.yaml", policies=3)
    with pytest.raises(TypeError, match=r"^bytes: True is not a size"):
        myriad.collective(SUPERPOD, "all-reduce", bytes=True)
    with pytest.raises(TypeError, match=r"^bytes: \[8\] is not a size"):
        myriad.collective(SUPERPOD, "all-reduce", bytes=[8])
    # A batch given twice, or too many, named the engine's global_batches, not the keyword.
    with pytest.raises(myriad.Error, match=r"^global_batch\[1\]: 512 is given twice"):
        myriad.search(SUPERPOD, global_batch=[512, 512])
    with pytest.raises(myriad.Error, match=r"^global_batch: 17 global batches"):
        myriad.search(SUPERPOD, global_batch=list(range(1, 18)))
    # top is at least 1 (the range said "from 0").
    with pytest.raises(myriad.Error, match=r"^top: -1 is not an integer from 1 to"):
        myriad.search(SUPERPOD, top=-1)


def test_the_flow_backend_is_a_keyword_of_train_and_collective():
    # train and collective had no backend: the flow-level simulation was the CLI's only.
    t = myriad.train(SUPERPOD, backend="flow")
    assert t["flow"]["backend"] == "flow" and t["flow"]["collectives"]
    assert t["flow"]["analytical"]["step_time_s"] == myriad.train(SUPERPOD)["step_time_s"]
    assert "flow" not in myriad.train(SUPERPOD)
    c = myriad.collective(SUPERPOD, "all-reduce", bytes="1GiB", group="tp", backend="flow")
    assert c["backend"] == "flow" and c["links"] and c["bytes"] == 1 << 30
    assert "backend" not in myriad.collective(SUPERPOD, "all-reduce", bytes="1GiB", group="tp")
    for call in (lambda b: myriad.train(SUPERPOD, backend=b), lambda b: myriad.collective(SUPERPOD, "all-reduce", bytes=8, backend=b)):
        with pytest.raises(myriad.Error, match=r"^backend: `netsim` is not analytical or flow$"):
            call("netsim")
        with pytest.raises(TypeError, match=r"^backend: None is not a string$"):
            call(None)


def test_a_byte_count_with_a_fraction_is_an_error_naming_bytes():
    # bytes=1.5 was sent as "1.5" and simulated as 2 B without a word.
    for bad in (1.5, "1.5", 0.25, "1.3KiB"):
        with pytest.raises(myriad.Error, match=r"^bytes: `[0-9.KiB]+` is .*not a whole number of bytes$"):
            myriad.collective(SUPERPOD, "all-reduce", bytes=bad, group="tp")
    with pytest.raises(myriad.Error, match=r"^bytes: `nan` is not a size"):
        myriad.collective(SUPERPOD, "all-reduce", bytes=float("nan"), group="tp")
    with pytest.raises(myriad.Error, match=r"^sweep: `0.5` is not a whole number of bytes$"):
        myriad.collective(SUPERPOD, "all-reduce", sweep="0.5..8", group="tp")
    # A float holding a whole count is that count; a size with a unit is whole bytes.
    for ok, want in ((1e9, 10**9), (1024.0, 1024), ("1.5KiB", 1536), ("0.1KB", 100)):
        assert myriad.collective(SUPERPOD, "all-reduce", bytes=ok, group="tp")["bytes"] == want


def _cli():
    """The release CLI beside the package (CI builds it before the Python tests)."""
    cli = ROOT / "target" / "release" / "myriad"
    if not cli.exists():
        pytest.skip("target/release/myriad not built")
    return cli


def _cli_json(*args):
    import subprocess

    out = subprocess.run([str(_cli()), *map(str, args), "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_serve_search_is_the_clis_serve_search():
    # The CLI's --search had no keyword: serve(search=True) gives its object.
    srv = ROOT / "examples" / "serve-llama3-70b-h100.yaml"
    r = myriad.serve(srv, requests=300, search=True)
    assert set(r) == {"candidates", "no_feasible_candidate"}
    assert r["candidates"] and all("description" in c for c in r["candidates"])
    with pytest.raises(myriad.Error, match="^load_sweep: a deployment search has no load sweep"):
        myriad.serve(srv, requests=300, search=True, load_sweep=True)
    with pytest.raises(TypeError, match="^search: 1 is not True or False$"):
        myriad.serve(srv, search=1)
    assert json.dumps(_cli_json("serve", srv, "--requests", "300", "--search")) == json.dumps(r)


def test_every_command_returns_the_clis_json_byte_for_byte():
    rel = ROOT / "examples" / "reliability-llama3.yaml"
    srv = ROOT / "examples" / "serve-llama3-70b-h100.yaml"
    sch = ROOT / "examples" / "sched-llama3-islands.yaml"
    cases = [
        (("cluster", SUPERPOD), lambda: myriad.cluster(SUPERPOD)),
        (("train", SUPERPOD), lambda: myriad.train(str(SUPERPOD))),
        (("plan", ROOT / "examples" / "plan-llama3-70b.yaml"), lambda: myriad.plan(ROOT / "examples" / "plan-llama3-70b.yaml")),
        (
            ("reliability", rel, "--days", "54", "--replicas", "40", "--seed", "3", "--compare", "domain"),
            lambda: myriad.reliability(rel, days=54, replicas=40, seed=3, compare="domain"),
        ),
        (("serve", srv, "--requests", "400", "--seed", "5"), lambda: myriad.serve(srv, requests=400, seed=5)),
        (("sched", sch, "--policies", "fifo,backfill", "--seed", "2"), lambda: myriad.sched(sch, policies=["fifo", "backfill"], seed=2)),
        (
            ("collective", SUPERPOD, "--op", "all-gather", "--sweep", "1KiB..1GiB", "--group", "dp", "--algorithm", "ring"),
            lambda: myriad.collective(SUPERPOD, "all-gather", sweep="1KiB..1GiB", group="dp", algorithm="ring"),
        ),
        # The flow backend was the CLI's only.
        (("train", SUPERPOD, "--backend", "flow"), lambda: myriad.train(SUPERPOD, backend="flow")),
        (("train", SUPERPOD, "--backend", "analytical"), lambda: myriad.train(SUPERPOD, backend="analytical")),
        (
            ("collective", SUPERPOD, "--op", "all-reduce", "--sweep", "1MiB..64MiB", "--group", "dp", "--backend", "flow"),
            lambda: myriad.collective(SUPERPOD, "all-reduce", sweep="1MiB..64MiB", group="dp", backend="flow"),
        ),
        (
            ("collective", ROOT / "examples" / "netsim-islands-7to1.yaml", "--op", "all-to-all", "--bytes", "64MiB", "--group", "all", "--backend", "flow"),
            lambda: myriad.collective(ROOT / "examples" / "netsim-islands-7to1.yaml", "all-to-all", bytes=64 << 20, backend="flow"),
        ),
        (("validate", ROOT / "validation" / "training-heldout-megascale.json"), lambda: myriad.validate(ROOT / "validation" / "training-heldout-megascale.json")),
    ]
    for args, call in cases:
        assert json.dumps(call()) == json.dumps(_cli_json(*args)), args[0]
    # search's wall time aside.
    a = _cli_json("search", SUPERPOD, "--top", "3", "--global-batch", "1024,2048")
    b = myriad.search(SUPERPOD, top=3, global_batch="1024,2048")
    for r in (a, b):
        del r["seconds"], r["configs_per_second"]
    assert json.dumps(a) == json.dumps(b)


NODE = {"format": "myriad/1", "cluster": {"accelerator": "h100-sxm", "count": 8, "scale_out": {"fabric": "infiniband-ndr"}}}


def test_sweep_takes_a_dict_spec(tmp_path, monkeypatch):
    # A spec was a file only ("expected str, bytes or os.PathLike object, not dict").
    spec = {"format": "myriad-sweep/1", "base": NODE, "vary": {"cluster.count": [8, 16, 32]}, "outputs": ["switches_total", "capex_usd"]}
    df = myriad.sweep(spec)
    assert list(df["cluster.count"]) == [8, 16, 32]
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    assert df.equals(myriad.sweep(p))
    # A base given as a path is relative to the working directory, as a dict scenario's files.
    (tmp_path / "node.json").write_text(json.dumps(NODE))
    monkeypatch.chdir(tmp_path)
    assert df.equals(myriad.sweep(dict(spec, base="node.json")))
    with pytest.raises(FileNotFoundError) as e:
        myriad.sweep(dict(spec, base="missing.json"))
    assert e.value.filename == "missing.json"
    with pytest.raises(myriad.Error, match=r"^<dict>: vary: empty"):
        myriad.sweep(dict(spec, vary={}))


def test_sweep_columns_have_their_kinds_dtypes():
    import pandas as pd

    df = myriad.sweep(SWEEP)
    # error, all empty, was a float64 column of NaN.
    assert df["error"].dtype == object and df["error"].isna().all()
    assert df["fits"].dtype == bool and df["switches_total"].dtype == "int64"
    assert df["cluster.scale_out.oversubscription"].dtype == "int64" and df["step_time_s"].dtype == "float64"
    # A row that fails (12 accelerators do not fill a scale-up domain of 8): its outputs
    # are missing, so the integer and boolean columns are pandas' nullable types, not float
    # and object; a varied text column stays text even where it reads as a number.
    spec = {
        "format": "myriad-sweep/1",
        "base": dict(NODE, model={"preset": "llama3-8b"}, training={"tp": 8, "global_batch": 64}),
        "vary": {"cluster.count": [8, 12], "name": ["1e3", "NA"]},
    }
    df = myriad.sweep(spec)
    assert df["switches_total"].dtype == pd.Int64Dtype() and df["switches_total"].isna().sum() == 2
    assert df["fits"].dtype == pd.BooleanDtype()
    assert df["step_time_s"].dtype == "float64"
    assert list(df["name"]) == ["1e3", "NA", "1e3", "NA"] and df["name"].dtype == object
    assert df["error"].notna().sum() == 2
    numeric = [c for c in df.columns if c not in ("name", "error")]
    assert not [c for c in numeric if df[c].dtype == object]


def test_every_public_function_has_a_runnable_example(monkeypatch):
    import doctest
    import inspect

    monkeypatch.chdir(ROOT)
    import myriad.ray

    for name in [n for n in myriad.__all__ if n not in ("Error", "__version__")]:
        f = getattr(myriad, name)
        doc = inspect.getdoc(f)
        assert doc and len(doc.splitlines()) > 2, name
        test = doctest.DocTestParser().get_doctest(doc, {"myriad": myriad}, name, None, 0)
        assert test.examples, f"{name} has no example"
        assert not [e for e in test.examples if doctest.SKIP in e.options], name
        runner = doctest.DocTestRunner()
        runner.run(test)
        assert runner.failures == 0, name
    sig = inspect.signature(myriad.reliability)
    assert list(sig.parameters) == ["scenario", "days", "replicas", "seed", "compare"]
    assert inspect.getdoc(myriad.ray.sweep)


def test_the_package_is_typed_for_ides():
    pkg = pathlib.Path(myriad.__file__).parent
    assert (pkg / "py.typed").exists()
    stub = (pkg / "_myriad.pyi").read_text()
    # Every function of the extension has its stub.
    for name in dir(myriad._myriad):
        if callable(getattr(myriad._myriad, name)) and not name.startswith("_") and name != "Error":
            assert f"def {name}(" in stub, name
    assert "class Error(ValueError)" in stub


def test_threads_run_at_once_and_give_the_same_results():
    # The engine releases the GIL: two searches in threads both finish with the single
    # thread's answer (their wall time is not asserted; it depends on the machine's cores).
    import threading
    import time

    want = myriad.search(SUPERPOD, top=3)
    out, spans = [], []

    def run():
        t0 = time.perf_counter()
        out.append(myriad.search(SUPERPOD, top=3))
        spans.append((t0, time.perf_counter()))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    # The main thread keeps the GIL usable while the engine runs.
    ticks = 0
    while any(t.is_alive() for t in threads):
        ticks += 1
        time.sleep(0.001)
    for t in threads:
        t.join()
    drop = lambda r: {k: v for k, v in r.items() if k not in ("seconds", "configs_per_second")}
    assert [drop(r) for r in out] == [drop(want)] * 2
    assert ticks > 0
    rel = ROOT / "examples" / "reliability-llama3.yaml"
    srv = ROOT / "examples" / "serve-llama3-70b-h100.yaml"
    assert myriad.reliability(rel, days=30, replicas=30, seed=9) == myriad.reliability(rel, days=30, replicas=30, seed=9)
    assert myriad.serve(srv, requests=300, seed=9) == myriad.serve(srv, requests=300, seed=9)
    assert myriad.serve(srv, requests=300, seed=9) != myriad.serve(srv, requests=300, seed=10)
