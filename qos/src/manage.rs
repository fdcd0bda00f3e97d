//! Global management of a table: which insertion, and which repairs after an
//! insertion or a release (seed 000, section 5.1; seed 002, section 10).

use std::fmt;
use std::str::FromStr;

use crate::sets::{Handle, Insertion, Set, SetError, SetTable};

/// A management model: insertion policy plus the repairs that keep the table
/// normalized, so that admission never fails for fragmentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Model {
    /// Leftmost insertion; defragmentation after every insertion and release.
    M1,
    /// Leftmost insertion; after a release, reordering then defragmentation.
    M2,
    /// Leftmost insertion; after a release, defragmentation then reordering.
    M3,
    /// Smart insertion; defragmentation after a release.
    Smart,
}

impl Model {
    /// All four, in the order the seeds list them.
    pub const ALL: [Model; 4] = [Model::M1, Model::M2, Model::M3, Model::Smart];

    /// The insertion policy of the model.
    pub fn insertion(self) -> Insertion {
        match self {
            Model::Smart => Insertion::Smart,
            _ => Insertion::Leftmost,
        }
    }

    /// Places a request of distance `2^level` and repairs the table; `None`
    /// (with nothing changed) when no free set of that level exists.
    pub fn insert(self, t: &mut SetTable, level: u32) -> Option<Placed> {
        let (handle, set) = t.insert(level, self.insertion())?;
        let swaps = match self {
            Model::M1 => t.defragment(level),
            Model::M2 | Model::M3 | Model::Smart => 0,
        };
        Some(Placed {
            handle,
            set: t.held(handle).unwrap_or(set),
            swaps,
        })
    }

    /// Releases a request and repairs the table; returns the swaps done.
    pub fn release(self, t: &mut SetTable, h: Handle) -> Result<u32, SetError> {
        let set = t.release(h)?;
        Ok(match self {
            Model::M1 | Model::Smart => t.defragment(set.level),
            Model::M2 => t.reorder() + t.defragment(set.level),
            Model::M3 => t.defragment(set.level) + t.reorder(),
        })
    }
}

/// Where [`Model::insert`] placed a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// The request's name in the table.
    pub handle: Handle,
    /// Its set after the repairs.
    pub set: Set,
    /// Set swaps the repairs did.
    pub swaps: u32,
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Model::M1 => "m1",
            Model::M2 => "m2",
            Model::M3 => "m3",
            Model::Smart => "smart",
        })
    }
}

/// A model name that is not one of `m1`, `m2`, `m3`, `smart`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown management model {0:?}: use m1, m2, m3 or smart")]
pub struct UnknownModel(pub String);

impl FromStr for Model {
    type Err = UnknownModel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "m1" => Ok(Model::M1),
            "m2" => Ok(Model::M2),
            "m3" => Ok(Model::M3),
            "smart" => Ok(Model::Smart),
            _ => Err(UnknownModel(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_parse_and_print() {
        for m in Model::ALL {
            assert_eq!(m.to_string().parse::<Model>().unwrap(), m);
        }
        assert!("m4".parse::<Model>().is_err());
    }

    #[test]
    fn m1_defragments_after_a_leftmost_insertion_into_an_unordered_table() {
        // Normalized but not ordered: E(1,0) lies left of the smaller E(3,8).
        let mut t = SetTable::with_free_sets(16, &[(1, 0), (3, 8), (4, 15)]).unwrap();
        let p = Model::M1.insert(&mut t, 3).unwrap();
        assert!(p.swaps > 0);
        assert!(t.is_normalized());
        assert_eq!(t.free_entries(), 11 - 2);
    }

    #[test]
    fn m2_and_m3_leave_the_table_ordered_after_a_release() {
        // M2 first moves E(3,4) left of E(2,0) (to E(3,0)), M3 first merges
        // the two level-2 sets; both end normalized and ordered.
        for (model, end) in [(Model::M2, "{1:[8], 3:[0]}"), (Model::M3, "{1:[8], 3:[4]}")] {
            // {3:[4], 2:[12]} plus a tracked request in E(2,0): releasing it
            // gives {2:[0,12], 3:[4]}, neither normalized nor ordered.
            let mut t = SetTable::with_free_sets(16, &[(3, 4), (2, 12), (2, 0)]).unwrap();
            let (h, s) = t.insert(2, Insertion::Leftmost).unwrap();
            assert_eq!(s.start, 0);
            let swaps = t.swaps();
            assert!(model.release(&mut t, h).unwrap() > 0);
            assert!(t.swaps() > swaps);
            assert!(t.is_normalized() && t.is_ordered(), "{model}");
            assert_eq!(t.describe(), end, "{model}");
        }
    }
}
