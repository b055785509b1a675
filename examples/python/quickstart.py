# %% [markdown]
# # Myriad from Python
# Run cell by cell in Jupyter/VS Code (the `# %%` markers), or as a script:
# `pip install . && python examples/python/quickstart.py` from the repository root.

# %%
import myriad

# A scenario is a myriad/1 file or a dict with the same keys.
superpod = "examples/dgx-superpod-h100.yaml"
t = myriad.train(superpod)
print(f"{t['model']}: step {t['step_time_s']:.2f} s, MFU {100 * t['mfu']:.1f}%, "
      f"{t['memory_gib_per_accelerator']:.1f} GiB per GPU")
print({k: round(v, 3) for k, v in t["breakdown"].items()})

# %%
# The same cluster as a dict: how many switches and megawatts?
c = myriad.cluster({
    "format": "myriad/1",
    "cluster": {"accelerator": "gb200", "count": 72 * 64, "scale_up": "gb200-nvl72"},
})
print(c["switches_total"], "switches,", round(c["facility_power_mw"], 2), "MW")

# %%
# Which parallel plan is fastest?
r = myriad.search(superpod, top=3)
for p in r["top"]:
    plan = p["plan"]
    print(plan["tp"], plan["pp"], plan["dp"], plan["micro_batch"], round(p["step_time_s"], 3))

# %%
# A grid of scenarios as a pandas DataFrame (and the same on a Ray cluster:
# `import myriad.ray; myriad.ray.sweep(spec, address="auto")`).
df = myriad.sweep("examples/sweep/oversubscription.yaml")
print(df[["cluster.scale_out.oversubscription", "training.vpp", "step_time_s"]])

# %%
# A report to share.
with open("train-report.html", "w") as f:
    f.write(myriad.report("train", t))
