"""rsim.run(..., client=distributed.Client(LocalCluster(2 workers))): the sweep's shards as Dask tasks,
merged by rsim merge, equal to a local run (issue 44 item 5); a shard that fails names itself."""
import os
import sys

import rsim

try:
    from distributed import Client, LocalCluster
except ImportError:
    sys.exit("test_cluster: python3-distributed is not installed (scripts/install-deps.sh installs it)")

SRC = os.environ["RSIM_TEST_SOURCE"]
SCEN = os.path.join(SRC, "scenarios", "fc_sweep.yaml")
HW = os.path.join(SRC, "hardware")


def main():
    local = rsim.run(SCEN, hw_dir=HW)
    # fc_sweep by hand: batch 1, 8, 64 × features 256, 512, 1024, 2048, 4096 = 15 points, on 2 platforms
    # (rtx3080, xeon_silver_4210_2s), one linear layer each: 30 summary rows, 30 layer rows
    assert len(local.summary) == 15 * 2, len(local.summary)
    assert len(local.rows) == 15 * 2, len(local.rows)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        far = rsim.run(SCEN, hw_dir=HW, client=client)  # 2 × 2 workers = 4 shards: 4, 4, 4, 3 points
        assert far.summary == local.summary, "the Dask run's summary differs from the local run's"
        assert far.rows == local.rows, "the Dask run's rows differ from the local run's"
        assert far.kernels == local.kernels
        seven = rsim.run(SCEN, hw_dir=HW, client=client, shards=7, set={"batch": 8})  # a pinned variable: 5 points in 7 shards (2 empty)
        assert len(seven.summary) == 5 * 2, len(seven.summary)
        assert seven.summary == rsim.run(SCEN, hw_dir=HW, set={"batch": 8}).summary
        # the layer at batch 8, features 256 on the rtx3080: MACs = 8 · 256 · 256 = 524,288
        row = next(r for r in seven.rows if r["platform"] == "rtx3080" and r["features"] == 256)
        assert float(row["macs"]) == 8 * 256 * 256, row["macs"]
        try:
            rsim.run(SCEN, hw_dir=HW, client=client, shards=2, set={"no_such_var": 1})
        except rsim.Error as e:
            assert "shard 0 of 2 failed" in str(e) and "no_such_var" in str(e), str(e)
        else:
            raise AssertionError("a failing shard did not fail the run")
    print("test_cluster: the LocalCluster runs equal the local ones; a failing shard names itself")


if __name__ == "__main__":
    main()
