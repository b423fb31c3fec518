//! Counting primes: by trial division (what every runtime's program does, spec §4), and by a
//! sieve (what the lab uses to check a program's answer without repeating its work).

/// The number of primes <= `range` by trial division by every d = 2, 3, 4, ... while d x d <= n:
/// the seed's brute force, which the Erlang and CAF peers do too, and the work the `prime`
/// program and each `ping_pong_lb_prime` server do.
///
/// ```
/// assert_eq!(troupe_lab_workloads::energy::primes::count_trial(100), 25);
/// ```
pub fn count_trial(range: u64) -> u64 {
    (2..=range).filter(|&n| is_prime(n)).count() as u64
}

fn is_prime(n: u64) -> bool {
    let mut d = 2;
    while d * d <= n {
        if n % d == 0 {
            return false;
        }
        d += 1;
    }
    n >= 2
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
