//! `rcud bench kernels`: every kernel measured on both engines and the
//! plain loop, in one table. Shape only: no timing is asserted.

use std::process::Command;

#[test]
fn bench_kernels_reports_both_engines_and_the_plain_loop_for_every_kernel() {
    let out = Command::new(env!("CARGO_BIN_EXE_rcud"))
        .args(["bench", "--format", "json", "kernels", "--quick"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let rows: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let finite = |row: &serde_json::Value, field: &str| {
        let v = row[field].as_f64().unwrap_or(f64::NAN);
        assert!(v.is_finite() && v > 0.0, "{field}: {row}");
        v
    };
    for kernel in ["vec_add", "matmul_tile16", "reduce_shfl", "poly_loop"] {
        let of_kernel: Vec<_> = rows
            .iter()
            .filter(|r| r["kernel"].as_str().unwrap().starts_with(kernel))
            .collect();
        assert_eq!(of_kernel.len(), 5, "{kernel}: {stdout}");
        let plain: Vec<_> = of_kernel
            .iter()
            .filter(|r| r["runner"] == "plain")
            .collect();
        assert_eq!(plain.len(), 1, "{kernel}: {stdout}");
        assert_eq!(plain[0]["plain_over_engine"], 1.0);
        let insts = plain[0]["thread_instructions"].as_u64().unwrap();
        assert!(insts > 0, "{kernel}");
        for runner in ["interp", "jit"] {
            for threads in [1, cores] {
                let row = of_kernel
                    .iter()
                    .find(|r| r["runner"] == runner && r["threads"] == threads)
                    .unwrap_or_else(|| panic!("{kernel} {runner} {threads}: {stdout}"));
                finite(row, "ms_per_launch");
                finite(row, "g_thread_insts_per_s");
                finite(row, "jit_over_interp");
                finite(row, "plain_over_engine");
                // Both engines execute the same instructions.
                assert_eq!(row["thread_instructions"].as_u64(), Some(insts), "{row}");
                if runner == "jit" {
                    assert!(finite(row, "compile_ms") > 0.0);
                    let taken = row["compiled_insts"].as_str().unwrap();
                    let (done, total) = taken.split_once('/').unwrap();
                    let (done, total): (u64, u64) = (done.parse().unwrap(), total.parse().unwrap());
                    assert!(done > 0 && done <= total, "{row}");
                } else {
                    assert_eq!(row["jit_over_interp"], 1.0, "{row}");
                    assert!(row["compile_ms"].is_null(), "{row}");
                }
            }
        }
    }
    // The human table names every engine too.
    let table = Command::new(env!("CARGO_BIN_EXE_rcud"))
        .args(["bench", "kernels", "--quick"])
        .output()
        .unwrap();
    assert!(table.status.success());
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.starts_with("kernel"), "{table}");
    assert_eq!(table.lines().count(), 1 + 4 * 5, "{table}");
}
