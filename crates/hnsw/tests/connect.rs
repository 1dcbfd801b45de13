//! Back-links with stored distances and cached flags (`vector_hnsw::connect`) against the
//! whole selection they stand for.

use vector_hnsw::connect::{update_connection, ConnectScratch, Connected, Link};

/// Points in the plane; element `i` is `points[i]`, element 0 owns the list.
struct Plane {
    points: Vec<(f32, f32)>,
    calls: usize,
}

impl Plane {
    fn new(n: usize, seed: u64) -> Self {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32) / (1u64 << 31) as f32
        };
        let points = (0..n).map(|_| (next(), next())).collect();
        Plane { points, calls: 0 }
    }

    fn distance(&mut self, a: u32, b: u32) -> f32 {
        self.calls += 1;
        let (p, q) = (self.points[a as usize], self.points[b as usize]);
        ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt()
    }

    fn link(&mut self, id: u32) -> Link<u32> {
        let distance = self.distance(0, id);
        Link {
            id,
            distance,
            closer: false,
        }
    }
}

/// The heuristic over every candidate, written out plainly: the ids the list keeps, and the
/// one left out.
fn full_selection(
    plane: &mut Plane,
    links: &[Link<u32>],
    new: Link<u32>,
    lm: usize,
) -> (Vec<u32>, u32) {
    let mut all: Vec<Link<u32>> = links.to_vec();
    all.push(new);
    // Nearest first, ties by smaller id first.
    all.sort_by(|a, b| a.distance.total_cmp(&b.distance).then(a.id.cmp(&b.id)));
    let mut accepted: Vec<Link<u32>> = Vec::new();
    let mut rejected = Vec::new();
    let mut rest = all.into_iter();
    for e in rest.by_ref() {
        let keep = accepted
            .iter()
            .all(|r| plane.distance(e.id, r.id) > e.distance);
        if keep {
            accepted.push(e);
        } else {
            rejected.push(e);
        }
        if accepted.len() == lm {
            break;
        }
    }
    let mut kept: Vec<u32> = accepted.iter().map(|l| l.id).collect();
    let mut rejected = rejected.into_iter().chain(rest);
    while kept.len() < lm {
        kept.push(rejected.next().expect("lm + 1 candidates").id);
    }
    (kept, rejected.next().expect("one left out").id)
}

fn ids(links: &[Link<u32>]) -> Vec<u32> {
    let mut ids: Vec<u32> = links.iter().map(|l| l.id).collect();
    ids.sort_unstable();
    ids
}

#[test]
fn appends_while_there_is_room() {
    let mut plane = Plane::new(10, 1);
    let mut links = Vec::new();
    let mut set = false;
    let mut scratch = ConnectScratch::default();
    for id in 1..=4 {
        let new = plane.link(id);
        plane.calls = 0;
        let done = update_connection(&mut links, &mut set, new, 4, &mut scratch, |a, b| {
            plane.distance(a, b)
        });
        assert_eq!(done, Connected::Appended);
        assert_eq!(plane.calls, 0, "an append computes no distance");
    }
    assert_eq!(ids(&links), vec![1, 2, 3, 4]);
    assert!(!set);
}

#[test]
fn first_overflow_is_the_whole_selection() {
    for seed in 0..300 {
        let lm = 2 + (seed as usize % 9);
        let mut plane = Plane::new(lm + 2, seed);
        let mut links: Vec<Link<u32>> = (1..=lm as u32).map(|id| plane.link(id)).collect();
        let new = plane.link(lm as u32 + 1);
        let (kept, out) = full_selection(&mut plane, &links, new, lm);
        let before = links.clone();
        let mut set = false;
        let done = update_connection(
            &mut links,
            &mut set,
            new,
            lm,
            &mut ConnectScratch::default(),
            |a, b| plane.distance(a, b),
        );
        assert!(set, "flags are set once the list was selected");
        let mut expected = kept.clone();
        expected.sort_unstable();
        assert_eq!(ids(&links), expected, "seed {seed}");
        match done {
            Connected::Unchanged => assert_eq!(out, new.id, "seed {seed}"),
            Connected::Replaced(i) => {
                assert_eq!(
                    before[i].id, out,
                    "seed {seed}: the one left out is replaced"
                );
                assert_eq!(links[i].id, new.id);
            }
            Connected::Appended => panic!("the list was full"),
        }
    }
}

/// Many elements asking to join one list, with and without the cached flags: the cache
/// saves most distances and keeps (almost) every list the whole selection would keep.
#[test]
fn cached_flags_save_distances_and_keep_the_lists() {
    let (lm, joins) = (16, 400);
    let mut total_full = 0;
    let mut total_cached = 0;
    let mut differing = 0;
    let mut updates = 0;
    for seed in 0..20 {
        let mut plane = Plane::new(lm + joins + 1, 1000 + seed);
        let mut cached: Vec<Link<u32>> = Vec::new();
        let mut full: Vec<Link<u32>> = Vec::new();
        let mut cached_set = false;
        let mut scratch = ConnectScratch::default();
        for id in 1..=(lm + joins) as u32 {
            let new = plane.link(id);
            plane.calls = 0;
            update_connection(
                &mut cached,
                &mut cached_set,
                new,
                lm,
                &mut scratch,
                |a, b| plane.distance(a, b),
            );
            total_cached += plane.calls;
            plane.calls = 0;
            let mut never = false;
            update_connection(&mut full, &mut never, new, lm, &mut scratch, |a, b| {
                plane.distance(a, b)
            });
            total_full += plane.calls;
            if id as usize > lm {
                updates += 1;
                if ids(&cached) != ids(&full) {
                    differing += 1;
                    // Follow the whole selection from here on.
                    cached = full.clone();
                    cached_set = false;
                }
            }
        }
    }
    assert!(
        total_cached * 8 < total_full,
        "cached {total_cached} distances, whole selections {total_full}"
    );
    assert!(
        differing * 100 <= updates,
        "{differing} of {updates} updates kept another list"
    );
}

#[test]
fn a_new_link_left_out_changes_no_slot() {
    let mut plane = Plane::new(6, 7);
    plane.points = vec![
        (0.0, 0.0),
        (0.1, 0.0),
        (0.0, 0.1),
        (-0.1, 0.0),
        (0.0, -0.1),
        (5.0, 5.0),
    ];
    let mut links: Vec<Link<u32>> = (1..=4).map(|id| plane.link(id)).collect();
    let before = ids(&links);
    let new = plane.link(5);
    let mut set = false;
    let done = update_connection(
        &mut links,
        &mut set,
        new,
        4,
        &mut ConnectScratch::default(),
        |a, b| plane.distance(a, b),
    );
    assert_eq!(done, Connected::Unchanged);
    assert_eq!(ids(&links), before);
    assert!(
        links.iter().all(|l| l.closer),
        "the four around the owner all accepted"
    );
}
