//! A small deterministic generator for the tests that draw random inputs (a linear
//! congruential one, Knuth's MMIX constants), so that a failure repeats with its seed.

pub(crate) struct Draw(pub u64);

impl Draw {
    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }

    /// One of `from`.
    pub fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}
