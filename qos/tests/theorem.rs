//! The theorem of the table model (seed 002, theorems 3, 4 and 14), checked
//! over random sequences of insertions and releases under every management
//! model: the table stays normalized, the levels holding a singular set are
//! exactly the 1-bits of the free-entry count, and a request of distance `d`
//! is admitted exactly when at least `N/d` entries are free.

use proptest::prelude::*;
use rcud_qos::admission::{Link, Refusal, Request, Table, TableConfig};
use rcud_qos::{Handle, Model, SetTable};

#[derive(Debug, Clone)]
enum Op {
    /// Insert at this level (taken modulo `n + 1`).
    Insert(u32),
    /// Release the live request at this index (modulo their number).
    Release(usize),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            (0u32..7).prop_map(Op::Insert),
            any::<usize>().prop_map(Op::Release),
        ],
        1..300,
    )
}

fn model() -> impl Strategy<Value = Model> {
    prop_oneof![
        Just(Model::M1),
        Just(Model::M2),
        Just(Model::M3),
        Just(Model::Smart)
    ]
}

/// Every invariant the theorem promises, plus the bookkeeping of requests.
fn check(t: &SetTable, model: Model, live: &[(Handle, u32)]) -> Result<(), TestCaseError> {
    let n = t.bits();
    let free = t.free_entries();
    prop_assert!(t.is_normalized(), "{model}: {}", t.describe());
    if matches!(model, Model::M2 | Model::M3) {
        prop_assert!(t.is_ordered(), "{model}: {}", t.describe());
    }
    let singular = t.singular_sets();
    for level in 0..=n {
        let size = t.set_size(level);
        let here = singular.iter().filter(|s| s.level == level).count();
        prop_assert_eq!(
            here == 1,
            free & size != 0,
            "level {} of {}",
            level,
            t.describe()
        );
        prop_assert_eq!(
            t.fits(level),
            free >= size,
            "level {} of {}",
            level,
            t.describe()
        );
    }
    // Requests hold whole sets of their level, and nothing else is occupied.
    let mut held = 0;
    for &(h, level) in live {
        let s = t.held(h).expect("live");
        prop_assert_eq!(s.level, level);
        for id in t.ids(s) {
            prop_assert_eq!(t.holder(id), Some(h));
        }
        held += t.set_size(level);
    }
    prop_assert_eq!(held + free, t.entries());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn admission_depends_only_on_the_free_count(
        model in model(),
        entries in prop_oneof![Just(8u32), Just(16), Just(64)],
        ops in ops(),
    ) {
        let mut t = SetTable::new(entries).unwrap();
        let n = t.bits();
        let mut live: Vec<(Handle, u32)> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(l) => {
                    let level = l % (n + 1);
                    let room = t.free_entries() >= t.set_size(level);
                    match model.insert(&mut t, level) {
                        Some(p) => {
                            prop_assert!(room);
                            live.push((p.handle, level));
                        }
                        None => prop_assert!(!room, "{} refused at level {} with {} free: {}",
                                             model, level, t.free_entries(), t.describe()),
                    }
                }
                Op::Release(i) if !live.is_empty() => {
                    let (h, _) = live.swap_remove(i % live.len());
                    model.release(&mut t, h).unwrap();
                }
                Op::Release(_) => {}
            }
            check(&t, model, &live)?;
        }
    }

    #[test]
    fn connections_are_refused_only_for_lack_of_entries(
        model in model(),
        reqs in prop::collection::vec((1u32..=2000, 2u32..=64, any::<bool>()), 1..200),
    ) {
        // One weight unit is 1000 B/s.
        let mut cfg = TableConfig::new(Link { bytes_per_second: 64.0 * 255.0 * 1000.0, mtu: 2048 });
        cfg.model = model;
        let mut t = Table::new(cfg).unwrap();
        let mut ids = Vec::new();
        for (units, distance, release) in reqs {
            if release && !ids.is_empty() {
                let id = ids.remove(0);
                t.release(id).unwrap();
                continue;
            }
            let free = t.sets().free_entries();
            let headroom = t.headroom(distance);
            match t.admit(Request::new(units as f64 * 1000.0, distance)) {
                Ok(a) => {
                    ids.push(a.id);
                    // Whatever fit, the headroom said it would.
                    prop_assert!(headroom.bytes_per_second >= units as f64 * 1000.0 - 1e-6);
                }
                Err(Refusal::NoRoom { needed, headroom: h }) => {
                    prop_assert!(needed > free, "refused with {} free for {}", free, needed);
                    prop_assert_eq!(h.free_entries, free);
                }
                Err(e) => prop_assert!(false, "unexpected refusal {}", e),
            }
            prop_assert!(t.sets().is_normalized());
            // The arbitration table has exactly the occupied entries, each
            // weighted, and never more than 255 per entry by construction.
            let busy = t.arbitration().iter().filter(|e| e.weight > 0).count() as u32;
            prop_assert_eq!(busy + t.sets().free_entries(), 64);
        }
    }

    #[test]
    fn repairs_restore_any_table(
        entries in prop_oneof![Just(16u32), Just(64)],
        ops in ops(),
    ) {
        // Leftmost insertions and bare releases, no repairs: any mess.
        let mut t = SetTable::new(entries).unwrap();
        let n = t.bits();
        let mut live: Vec<(Handle, u32)> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(l) => {
                    if let Some((h, s)) = t.insert(1 + l % n, rcud_qos::Insertion::Leftmost) {
                        live.push((h, s.level));
                    }
                }
                Op::Release(i) if !live.is_empty() => {
                    let (h, _) = live.swap_remove(i % live.len());
                    t.release(h).unwrap();
                }
                Op::Release(_) => {}
            }
        }
        let free = t.free_entries();
        // Reordering sorts the singular sets (theorem 10); in a normalized
        // table it merges none (theorem 11). In another, a set may land next
        // to a free brother and merge, which only helps.
        let mut sorted = t.clone();
        let before: Vec<u32> = {
            let mut v: Vec<u32> = sorted.singular_sets().iter().map(|s| s.level).collect();
            v.sort_unstable();
            v
        };
        sorted.reorder();
        let mut after: Vec<u32> = sorted.singular_sets().iter().map(|s| s.level).collect();
        after.sort_unstable();
        if t.is_normalized() {
            prop_assert_eq!(before, after);
        }
        prop_assert_eq!(sorted.free_entries(), free);
        prop_assert!(sorted.is_ordered(), "{} -> {}", t.describe(), sorted.describe());
        for &(h, level) in &live {
            prop_assert_eq!(sorted.held(h).unwrap().level, level);
        }
        // Defragmenting from the deepest level normalizes (theorem 7).
        t.defragment(n);
        prop_assert!(t.is_normalized(), "{}", t.describe());
        prop_assert_eq!(t.free_entries(), free);
        check(&t, Model::M1, &live)?;
    }
}
