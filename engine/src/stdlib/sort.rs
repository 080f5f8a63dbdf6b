//! The sort `table.sort` must reproduce: gopher-lua hands the table's array to Go's
//! `sort.Sort`, which (Go 1.19 and 1.20, `sort/zsortinterface.go`) is pattern-defeating
//! quicksort. Elements that compare equal, and any order an inconsistent comparator
//! produces, end up where this algorithm leaves them, so we take the same steps with the
//! same comparisons: insertion sort up to 12 elements, ninther pivots from 50, the
//! length-seeded xorshift of breakPatterns, partialInsertionSort (with Go's `j >= 1`
//! bound), partitionEqual, and the heapsort fallback after bits.Len(n) unbalanced rounds.
//!
//! Implementations of [`SortData`] may raise Lua errors (longjmp) from `less`; the code
//! here keeps no values with destructors on its frames.

/// What the sort needs from a sequence: compare two positions, swap two positions.
pub trait SortData {
    fn less(&mut self, i: usize, j: usize) -> bool;
    fn swap(&mut self, i: usize, j: usize);
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

/// Sorts positions `0..n`.
pub fn sort(data: &mut dyn SortData, n: usize) {
    if n <= 1 {
        return;
    }
    let limit = usize::BITS - n.leading_zeros();
    pdqsort(data, 0, n, limit as usize);
}

fn insertion_sort(data: &mut dyn SortData, a: usize, b: usize) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && data.less(j, j - 1) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sift_down(data: &mut dyn SortData, lo: usize, hi: usize, first: usize) {
    let mut root = lo;
    loop {
        let mut child = 2 * root + 1;
        if child >= hi {
            return;
        }
        if child + 1 < hi && data.less(first + child, first + child + 1) {
            child += 1;
        }
        if !data.less(first + root, first + child) {
            return;
        }
        data.swap(first + root, first + child);
        root = child;
    }
}

fn heap_sort(data: &mut dyn SortData, a: usize, b: usize) {
    let first = a;
    let hi = b - a;
    let mut i = (hi as isize - 1) / 2;
    while i >= 0 {
        sift_down(data, i as usize, hi, first);
        i -= 1;
    }
    let mut i = hi as isize - 1;
    while i >= 0 {
        data.swap(first, first + i as usize);
        sift_down(data, 0, i as usize, first);
        i -= 1;
    }
}

fn pdqsort(data: &mut dyn SortData, mut a: usize, mut b: usize, mut limit: usize) {
    const MAX_INSERTION: usize = 12;
    let mut was_balanced = true;
    let mut was_partitioned = true;
    loop {
        let length = b - a;
        if length <= MAX_INSERTION {
            insertion_sort(data, a, b);
            return;
        }
        if limit == 0 {
            heap_sort(data, a, b);
            return;
        }
        if !was_balanced {
            break_patterns(data, a, b);
            limit -= 1;
        }
        let (mut pivot, mut hint) = choose_pivot(data, a, b);
        if hint == Hint::Decreasing {
            reverse_range(data, a, b);
            pivot = (b - 1) - (pivot - a);
            hint = Hint::Increasing;
        }
        if was_balanced
            && was_partitioned
            && hint == Hint::Increasing
            && partial_insertion_sort(data, a, b)
        {
            return;
        }
        if a > 0 && !data.less(a - 1, pivot) {
            a = partition_equal(data, a, b, pivot);
            continue;
        }
        let (mid, already) = partition(data, a, b, pivot);
        was_partitioned = already;
        let (left, right) = (mid - a, b - mid);
        let threshold = length / 8;
        if left < right {
            was_balanced = left >= threshold;
            pdqsort(data, a, mid, limit);
            a = mid + 1;
        } else {
            was_balanced = right >= threshold;
            pdqsort(data, mid + 1, b, limit);
            b = mid;
        }
    }
}

fn partition(data: &mut dyn SortData, a: usize, b: usize, pivot: usize) -> (usize, bool) {
    data.swap(a, pivot);
    let (mut i, mut j) = (a as isize + 1, b as isize - 1);
    while i <= j && data.less(i as usize, a) {
        i += 1;
    }
    while i <= j && !data.less(j as usize, a) {
        j -= 1;
    }
    if i > j {
        data.swap(j as usize, a);
        return (j as usize, true);
    }
    data.swap(i as usize, j as usize);
    i += 1;
    j -= 1;
    loop {
        while i <= j && data.less(i as usize, a) {
            i += 1;
        }
        while i <= j && !data.less(j as usize, a) {
            j -= 1;
        }
        if i > j {
            break;
        }
        data.swap(i as usize, j as usize);
        i += 1;
        j -= 1;
    }
    data.swap(j as usize, a);
    (j as usize, false)
}

fn partition_equal(data: &mut dyn SortData, a: usize, b: usize, pivot: usize) -> usize {
    data.swap(a, pivot);
    let (mut i, mut j) = (a as isize + 1, b as isize - 1);
    loop {
        while i <= j && !data.less(a, i as usize) {
            i += 1;
        }
        while i <= j && data.less(a, j as usize) {
            j -= 1;
        }
        if i > j {
            break;
        }
        data.swap(i as usize, j as usize);
        i += 1;
        j -= 1;
    }
    i as usize
}

fn partial_insertion_sort(data: &mut dyn SortData, a: usize, b: usize) -> bool {
    const MAX_STEPS: usize = 5;
    const SHORTEST_SHIFTING: usize = 50;
    let mut i = a + 1;
    for _ in 0..MAX_STEPS {
        while i < b && !data.less(i, i - 1) {
            i += 1;
        }
        if i == b {
            return true;
        }
        if b - a < SHORTEST_SHIFTING {
            return false;
        }
        data.swap(i, i - 1);
        if i - a >= 2 {
            let mut j = i - 1;
            while j >= 1 {
                if !data.less(j, j - 1) {
                    break;
                }
                data.swap(j, j - 1);
                j -= 1;
            }
        }
        if b - i >= 2 {
            let mut j = i + 1;
            while j < b {
                if !data.less(j, j - 1) {
                    break;
                }
                data.swap(j, j - 1);
                j += 1;
            }
        }
    }
    false
}

/// breakPatterns: three swaps around the middle with positions from a xorshift
/// generator seeded by the length (sort.go `xorshift`: shifts 13, 17, 5).
fn break_patterns(data: &mut dyn SortData, a: usize, b: usize) {
    let length = b - a;
    if length >= 8 {
        let mut random = length as u64;
        // nextPowerOfTwo: 1 << bits.Len(length).
        let modulus = 1usize << (usize::BITS - length.leading_zeros());
        let middle = a + (length / 4) * 2;
        for idx in middle - 1..=middle + 1 {
            random ^= random << 13;
            random ^= random >> 17;
            random ^= random << 5;
            let mut other = (random as usize) & (modulus - 1);
            if other >= length {
                other -= length;
            }
            data.swap(idx, a + other);
        }
    }
}

fn choose_pivot(data: &mut dyn SortData, a: usize, b: usize) -> (usize, Hint) {
    const SHORTEST_NINTHER: usize = 50;
    const MAX_SWAPS: usize = 4 * 3;
    let l = b - a;
    let mut swaps = 0;
    let mut i = a + l / 4;
    let mut j = a + l / 4 * 2;
    let mut k = a + l / 4 * 3;
    if l >= 8 {
        if l >= SHORTEST_NINTHER {
            i = median(data, i - 1, i, i + 1, &mut swaps);
            j = median(data, j - 1, j, j + 1, &mut swaps);
            k = median(data, k - 1, k, k + 1, &mut swaps);
        }
        j = median(data, i, j, k, &mut swaps);
    }
    match swaps {
        0 => (j, Hint::Increasing),
        MAX_SWAPS => (j, Hint::Decreasing),
        _ => (j, Hint::Unknown),
    }
}

fn order2(data: &mut dyn SortData, a: usize, b: usize, swaps: &mut usize) -> (usize, usize) {
    if data.less(b, a) {
        *swaps += 1;
        (b, a)
    } else {
        (a, b)
    }
}

fn median(data: &mut dyn SortData, a: usize, b: usize, c: usize, swaps: &mut usize) -> usize {
    let (a, b) = order2(data, a, b, swaps);
    let (b, _) = order2(data, b, c, swaps);
    let (_, b) = order2(data, a, b, swaps);
    b
}

fn reverse_range(data: &mut dyn SortData, a: usize, b: usize) {
    let (mut i, mut j) = (a, b - 1);
    while i < j {
        data.swap(i, j);
        i += 1;
        j -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct ByKey<'a>(&'a mut Vec<(i32, usize)>);
    impl SortData for ByKey<'_> {
        fn less(&mut self, i: usize, j: usize) -> bool {
            self.0[i].0 < self.0[j].0
        }
        fn swap(&mut self, i: usize, j: usize) {
            self.0.swap(i, j);
        }
    }

    #[test]
    fn sorts_every_size_and_shape() {
        let mut seed = 12345u64;
        for n in 0..400usize {
            for shape in 0..4 {
                let mut v: Vec<(i32, usize)> = (0..n)
                    .map(|k| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let key = match shape {
                            0 => (seed >> 33) as i32 % 1000,
                            1 => k as i32,
                            2 => -(k as i32),
                            _ => (seed >> 33) as i32 % 3,
                        };
                        (key, k)
                    })
                    .collect();
                sort(&mut ByKey(&mut v), n);
                assert!(
                    v.windows(2).all(|w| w[0].0 <= w[1].0),
                    "n={n} shape={shape}"
                );
            }
        }
    }

    #[test]
    fn small_inputs_are_stable_like_go_insertion_sort() {
        let mut v: Vec<(i32, usize)> = vec![(2, 0), (1, 1), (2, 2), (1, 3), (0, 4)];
        sort(&mut ByKey(&mut v), 5);
        assert_eq!(v, vec![(0, 4), (1, 1), (1, 3), (2, 0), (2, 2)]);
    }

    #[test]
    fn inconsistent_comparator_terminates() {
        struct Le<'a>(&'a mut Vec<i32>);
        impl SortData for Le<'_> {
            fn less(&mut self, i: usize, j: usize) -> bool {
                self.0[i] <= self.0[j]
            }
            fn swap(&mut self, i: usize, j: usize) {
                self.0.swap(i, j);
            }
        }
        let mut v: Vec<i32> = (0..300).map(|k| k % 7).collect();
        sort(&mut Le(&mut v), 300);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }
}
