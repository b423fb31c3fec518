//! Counting primes: by trial division (what every runtime's program does, spec §4), and by a
//! sieve (what the lab uses to check a program's answer without repeating its work).
//!
//! Rules:
//! 1. The trial division is seed 002's CAF program (`is_prime` and `find_primes` of its
//!    `prime_calculation.cpp` and `ping_pong_lb_prime.cpp`), step for step: 32-bit signed
//!    integers (the C++ `int`), n < 2 is not prime, 2 is, and any other n is tested against every
//!    divisor 2..=floor(sqrt(n)), the bound computed once per n with a floating-point square
//!    root; the first divisor found ends the test.
//! 2. The sieve is independent of it and is used only to check answers.

/// The number of primes <= `range` by the seed's trial division (rule 1): the work the `prime`
/// program and each `ping_pong_lb_prime` request do.
///
/// ```
/// assert_eq!(troupe_lab_workloads::energy::primes::find_primes(100), 25);
/// ```
pub fn find_primes(range: i32) -> i32 {
    let mut prime_count = 0;
    for n in 2..=range {
        if is_prime(n) {
            prime_count += 1;
        }
    }
    prime_count
}

/// The seed's `is_prime` (rule 1).
///
/// ```
/// use troupe_lab_workloads::energy::primes::is_prime;
/// assert!(is_prime(2) && is_prime(3) && !is_prime(4) && !is_prime(121) && !is_prime(1));
/// ```
pub fn is_prime(n: i32) -> bool {
    if n < 2 {
        return false;
    }
    if n == 2 {
        return true;
    }
    let max = f64::from(n).sqrt() as i32;
    let mut i = 2;
    while i <= max {
        if n % i == 0 {
            return false;
        }
        i += 1;
    }
    true
}

/// [`find_primes`] for the lab's `range` key (at most 10^9, so it fits the seed's `int`).
///
/// # Panics
/// When `range` exceeds `i32::MAX`, which the `range` key never allows.
///
/// ```
/// assert_eq!(troupe_lab_workloads::energy::primes::count_trial(10_000), 1_229);
/// ```
pub fn count_trial(range: u64) -> u64 {
    let range = i32::try_from(range).expect("range fits the seed's 32-bit int (the range key stops at 10^9)");
    find_primes(range) as u64
}

/// The number of primes <= `range` by the sieve of Eratosthenes (one bit of memory per odd
/// number); for checking results.
///
/// ```
/// assert_eq!(troupe_lab_workloads::energy::primes::count_sieve(1_000_000), 78_498);
/// ```
pub fn count_sieve(range: u64) -> u64 {
    if range < 2 {
        return 0;
    }
    // Index i stands for the odd number 2i + 1.
    let n = range as usize;
    let half = n.div_ceil(2);
    let mut composite = vec![0u64; half.div_ceil(64)];
    let mut i = 1;
    while (2 * i + 1) * (2 * i + 1) <= n {
        if composite[i / 64] >> (i % 64) & 1 == 0 {
            let p = 2 * i + 1;
            let mut m = p * p;
            while m <= n {
                let j = m / 2;
                composite[j / 64] |= 1 << (j % 64);
                m += 2 * p;
            }
        }
        i += 1;
    }
    let odd_primes = (1..half).filter(|&i| composite[i / 64] >> (i % 64) & 1 == 0).count() as u64;
    1 + odd_primes
}
