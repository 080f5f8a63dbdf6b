//! Runs a batch of cases over the rayon pool with one memo of compiled patterns per worker,
//! kept for every case the worker takes: a script's cases (and the scripts of a library) share
//! their patterns, and compiling one costs more than routing hundreds of probes through it.

use std::sync::atomic::{AtomicUsize, Ordering};

use kruise_lua_engine::routing::matching::{PatternMemo, with_pattern_memo};
use rayon::prelude::*;

/// `run(item)` for every item, in parallel, in the items' order. Each worker takes the next
/// item not yet taken (a shared counter, so a worker that drew long cases takes fewer) and
/// keeps its memo across them; a plain `par_iter().map_init` makes a memo per split of the
/// items, eight on the library with one thread. The memo is bounded (`PatternMemo`).
pub fn map_keeping_patterns<T: Sync, R: Send>(items: &[T], run: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let workers = rayon::current_num_threads().clamp(1, items.len().max(1));
    let taken: Vec<Vec<(usize, R)>> = (0..workers)
        .into_par_iter()
        .map(|_| {
            let mut patterns = PatternMemo::default();
            let mut done = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(index) else {
                    break;
                };
                done.push((index, with_pattern_memo(&mut patterns, || run(item))));
            }
            done
        })
        .collect();
    let mut done: Vec<(usize, R)> = taken.into_iter().flatten().collect();
    done.sort_unstable_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_run_once_in_order() {
        let items: Vec<usize> = (0..1000).collect();
        let runs = AtomicUsize::new(0);
        let doubled = map_keeping_patterns(&items, |n| {
            runs.fetch_add(1, Ordering::Relaxed);
            n * 2
        });
        assert_eq!(doubled, items.iter().map(|n| n * 2).collect::<Vec<_>>());
        assert_eq!(runs.load(Ordering::Relaxed), 1000);
        assert!(map_keeping_patterns(&[] as &[u8], |_| ()).is_empty());
    }
}
