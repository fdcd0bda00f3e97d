//! Fill-reducing symmetric orderings of a square pattern, computed on the
//! graph of A + Aᵀ. Each answers `p` with B = A(p, p) the reordered matrix.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

use super::Pattern;

/// Breadth-first levels of the component of `start` among vertices with
/// `alive` set: the vertices in visiting order (neighbors by increasing
/// degree) and the level of each visited vertex.
fn bfs(adj: &[Vec<usize>], alive: &[bool], start: usize, level: &mut [usize]) -> Vec<usize> {
    let degree = |v: usize| adj[v].iter().filter(|&&u| alive[u]).count();
    let mut order = vec![start];
    let mut seen_at = vec![false; adj.len()];
    seen_at[start] = true;
    level[start] = 0;
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        let mut next: Vec<usize> = adj[v]
            .iter()
            .copied()
            .filter(|&u| alive[u] && !seen_at[u])
            .collect();
        next.sort_by_key(|&u| (degree(u), u));
        for u in next {
            seen_at[u] = true;
            level[u] = level[v] + 1;
            order.push(u);
            queue.push_back(u);
        }
    }
    order
}

/// A pseudo-peripheral vertex of `start`'s component (George–Liu): move to a
/// minimum-degree vertex of the last level while that deepens the BFS.
fn peripheral(adj: &[Vec<usize>], alive: &[bool], start: usize, level: &mut [usize]) -> usize {
    let degree = |v: usize| adj[v].iter().filter(|&&u| alive[u]).count();
    let mut root = start;
    let mut order = bfs(adj, alive, root, level);
    let mut depth = order.last().map_or(0, |&v| level[v]);
    loop {
        let Some(candidate) = order
            .iter()
            .copied()
            .filter(|&v| level[v] == depth)
            .min_by_key(|&v| (degree(v), v))
        else {
            return root;
        };
        let next = bfs(adj, alive, candidate, level);
        let next_depth = next.last().map_or(0, |&v| level[v]);
        if next_depth <= depth {
            // Restore the levels of `root`'s BFS for the caller.
            bfs(adj, alive, root, level);
            return root;
        }
        (root, order, depth) = (candidate, next, next_depth);
    }
}

/// `cusolverSpXcsrsymrcmHost`: reverse Cuthill–McKee, each connected
/// component from a pseudo-peripheral vertex; narrows the band.
pub fn symrcm(pattern: &Pattern) -> Vec<usize> {
    let adj = pattern.symmetric_graph();
    let n = adj.len();
    let alive = vec![true; n];
    let mut level = vec![0; n];
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    // Components in order of their lowest-degree vertex.
    let mut starts: Vec<usize> = (0..n).collect();
    starts.sort_by_key(|&v| (adj[v].len(), v));
    for s in starts {
        if done[s] {
            continue;
        }
        let root = peripheral(&adj, &alive, s, &mut level);
        for v in bfs(&adj, &alive, root, &mut level) {
            done[v] = true;
            order.push(v);
        }
    }
    order.reverse();
    order
}

/// `cusolverSpXcsrsymamdHost`: minimum degree on the elimination graph
/// (exact external degrees, ties to the lower index). Not AMD's
/// approximate degrees, but the same greedy rule.
pub fn symamd(pattern: &Pattern) -> Vec<usize> {
    let mut adj: Vec<BTreeSet<usize>> = pattern
        .symmetric_graph()
        .into_iter()
        .map(|l| l.into_iter().collect())
        .collect();
    let n = adj.len();
    let mut eliminated = vec![false; n];
    let mut heap: BinaryHeap<Reverse<(usize, usize)>> =
        (0..n).map(|v| Reverse((adj[v].len(), v))).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse((degree, v))) = heap.pop() {
        if eliminated[v] || degree != adj[v].len() {
            continue; // a stale entry
        }
        eliminated[v] = true;
        order.push(v);
        let neighbors: Vec<usize> = std::mem::take(&mut adj[v]).into_iter().collect();
        for &u in &neighbors {
            adj[u].remove(&v);
            for &w in &neighbors {
                if w != u {
                    adj[u].insert(w);
                }
            }
            heap.push(Reverse((adj[u].len(), u)));
        }
    }
    order
}

/// Parts at most this large are ordered by minimum degree, not dissected.
const LEAF: usize = 64;

/// `cusolverSpXcsrmetisndHost`: nested dissection of rcud's own (not
/// METIS's): a breadth-first level structure from a pseudo-peripheral
/// vertex splits each part at its middle level; the two halves are ordered
/// recursively, then the separator.
pub fn metisnd(pattern: &Pattern) -> Vec<usize> {
    let adj = pattern.symmetric_graph();
    let n = adj.len();
    let mut order = Vec::with_capacity(n);
    let mut level = vec![0; n];
    let mut alive = vec![false; n];
    dissect(&adj, (0..n).collect(), &mut alive, &mut level, &mut order);
    order
}

fn dissect(
    adj: &[Vec<usize>],
    part: Vec<usize>,
    alive: &mut [bool],
    level: &mut [usize],
    order: &mut Vec<usize>,
) {
    if part.len() <= LEAF {
        order.extend(leaf_order(adj, &part));
        return;
    }
    for &v in &part {
        alive[v] = true;
    }
    let root = peripheral(adj, alive, part[0], level);
    let reached = bfs(adj, alive, root, level);
    if reached.len() < part.len() {
        // Disconnected: each component on its own.
        let mut components = Vec::new();
        let mut seen = vec![false; adj.len()];
        for &s in &part {
            if !seen[s] {
                let component = bfs(adj, alive, s, level);
                for &v in &component {
                    seen[v] = true;
                }
                components.push(component);
            }
        }
        for &v in &part {
            alive[v] = false;
        }
        for component in components {
            dissect(adj, component, alive, level, order);
        }
        return;
    }
    let depth = reached.last().map_or(0, |&v| level[v]);
    if depth < 2 {
        // Too dense to split: order it as a leaf.
        for &v in &part {
            alive[v] = false;
        }
        order.extend(leaf_order(adj, &part));
        return;
    }
    let mid = depth / 2;
    let first = reached
        .iter()
        .copied()
        .filter(|&v| level[v] < mid)
        .collect();
    let rest = reached
        .iter()
        .copied()
        .filter(|&v| level[v] > mid)
        .collect();
    let separator: Vec<usize> = reached
        .iter()
        .copied()
        .filter(|&v| level[v] == mid)
        .collect();
    for &v in &part {
        alive[v] = false;
    }
    dissect(adj, first, alive, level, order);
    dissect(adj, rest, alive, level, order);
    order.extend(separator);
}

/// Minimum degree on the subgraph induced by `part`.
fn leaf_order(adj: &[Vec<usize>], part: &[usize]) -> Vec<usize> {
    let index: std::collections::HashMap<usize, usize> =
        part.iter().enumerate().map(|(k, &v)| (v, k)).collect();
    let mut rowptr = vec![0];
    let mut colind = Vec::new();
    for &v in part {
        colind.extend(adj[v].iter().filter_map(|u| index.get(u).copied()));
        rowptr.push(colind.len());
    }
    let sub = Pattern {
        m: part.len(),
        n: part.len(),
        rowptr,
        colind,
    };
    symamd(&sub).into_iter().map(|k| part[k]).collect()
}
