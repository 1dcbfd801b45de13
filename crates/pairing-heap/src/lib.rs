//! Pairing heap with PostgreSQL's exact tie behaviour.
//!
//! pgvector keeps HNSW's search queues and IVFFlat's probe selection in
//! PostgreSQL's `pairingheap`, and the order in which equal-distance items
//! come out of that heap decides which of them survive a bound (`ef`, the
//! number of probes) and in which order they are returned. To return the same
//! ids in the same order as pgvector, this heap follows the same shape rules:
//!
//! * insert merges the current root with the new node; the new node becomes
//!   the root only if it strictly outranks the root, otherwise it is linked
//!   as the root's first child;
//! * removing the root merges its children with the classic two-pass scheme:
//!   left-to-right in pairs (each merge keeps the left tree on ties), the
//!   pair results collected in reverse, then folded into one tree from that
//!   reversed list's head.
//!
//! Nodes live in a vector and are linked by index; popped nodes are simply
//! abandoned (heaps are short-lived, or bounded by the scan's memory limit).

const NIL: u32 = u32::MAX;

/// Which end of the distance order sits at the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapOrder {
    /// Smallest distance first.
    Nearest,
    /// Largest distance first.
    Furthest,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    item: u32,
    key: f64,
    child: u32,
    sibling: u32,
}

#[derive(Clone, Debug)]
pub struct PairingHeap {
    order: HeapOrder,
    nodes: Vec<Node>,
    root: u32,
    len: usize,
}

impl PairingHeap {
    pub fn new(order: HeapOrder) -> Self {
        PairingHeap {
            order,
            nodes: Vec::new(),
            root: NIL,
            len: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Positive when `a` belongs nearer the root than `b`, negative when
    /// `b` does, zero on ties (including NaN, like PostgreSQL's comparator).
    fn rank(&self, a: u32, b: u32) -> i32 {
        let ka = self.nodes[a as usize].key;
        let kb = self.nodes[b as usize].key;
        let (better, worse) = match self.order {
            HeapOrder::Nearest => (ka < kb, ka > kb),
            HeapOrder::Furthest => (ka > kb, ka < kb),
        };
        if better {
            1
        } else if worse {
            -1
        } else {
            0
        }
    }

    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        let (top, below) = if self.rank(a, b) < 0 { (b, a) } else { (a, b) };
        self.nodes[below as usize].sibling = self.nodes[top as usize].child;
        self.nodes[top as usize].child = below;
        top
    }

    fn merge_children(&mut self, first: u32) -> u32 {
        if first == NIL || self.nodes[first as usize].sibling == NIL {
            return first;
        }
        let mut pairs = NIL;
        let mut next = first;
        while next != NIL {
            let current = next;
            let partner = self.nodes[current as usize].sibling;
            if partner == NIL {
                self.nodes[current as usize].sibling = pairs;
                pairs = current;
                break;
            }
            next = self.nodes[partner as usize].sibling;
            let merged = self.merge(current, partner);
            self.nodes[merged as usize].sibling = pairs;
            pairs = merged;
        }
        let mut root = pairs;
        let mut next = self.nodes[pairs as usize].sibling;
        while next != NIL {
            let current = next;
            next = self.nodes[current as usize].sibling;
            root = self.merge(root, current);
        }
        root
    }

    /// Bytes the heap's nodes hold: every push keeps a node until the heap is dropped.
    pub fn allocated_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
    }

    /// Makes room for `additional` more pushes without reallocating; on failure, the bytes
    /// that were asked for.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), usize> {
        self.nodes
            .try_reserve(additional)
            .map_err(|_| additional.saturating_mul(std::mem::size_of::<Node>()))
    }

    pub fn push(&mut self, item: u32, key: f64) {
        let index = u32::try_from(self.nodes.len()).expect("pairing heap overflow");
        self.nodes.push(Node {
            item,
            key,
            child: NIL,
            sibling: NIL,
        });
        self.root = self.merge(self.root, index);
        self.nodes[self.root as usize].sibling = NIL;
        self.len += 1;
    }

    /// Item and key at the root.
    pub fn peek(&self) -> Option<(u32, f64)> {
        (self.root != NIL).then(|| {
            let node = &self.nodes[self.root as usize];
            (node.item, node.key)
        })
    }

    pub fn pop(&mut self) -> Option<(u32, f64)> {
        if self.root == NIL {
            return None;
        }
        let node = self.nodes[self.root as usize];
        self.root = self.merge_children(node.child);
        if self.root != NIL {
            self.nodes[self.root as usize].sibling = NIL;
        }
        self.len -= 1;
        Some((node.item, node.key))
    }

    /// The root followed by its direct children: the next item to pop and
    /// the set that contains the one after it. Used for look-ahead hints.
    pub fn upcoming(&self, max: usize) -> impl Iterator<Item = u32> + '_ {
        let mut cursor = self.root;
        let mut first = true;
        std::iter::from_fn(move || {
            if cursor == NIL {
                return None;
            }
            let node = &self.nodes[cursor as usize];
            cursor = if first { node.child } else { node.sibling };
            first = false;
            Some(node.item)
        })
        .take(max)
    }
}

impl Default for PairingHeap {
    fn default() -> Self {
        PairingHeap::new(HeapOrder::Nearest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(heap: &mut PairingHeap) -> Vec<u32> {
        std::iter::from_fn(|| heap.pop().map(|(item, _)| item)).collect()
    }

    #[test]
    fn orders_by_key() {
        let keys = [5.0, 1.0, 3.0, 4.0, 2.0, 0.5, 9.0];
        let mut near = PairingHeap::new(HeapOrder::Nearest);
        let mut far = PairingHeap::new(HeapOrder::Furthest);
        for (i, k) in keys.iter().enumerate() {
            near.push(i as u32, *k);
            far.push(i as u32, *k);
        }
        assert_eq!(near.len(), keys.len());
        assert_eq!(drain(&mut near), vec![5, 1, 4, 2, 3, 0, 6]);
        assert_eq!(drain(&mut far), vec![6, 0, 3, 2, 4, 1, 5]);
        assert!(near.is_empty());
    }

    /// Equal keys: the root keeps its place and later inserts become its
    /// first child, so after the first pop the pairing pass decides the
    /// order. These sequences were worked out by hand from the two-pass rule.
    #[test]
    fn ties_follow_postgres_shape() {
        let mut heap = PairingHeap::new(HeapOrder::Nearest);
        for i in 0..5 {
            heap.push(i, 1.0);
        }
        // root 0, children (first to last): 4 3 2 1
        // pop 0 -> pairs (4,3)->4[3], (2,1)->2[1]; list 2,4; fold: 2 wins.
        assert_eq!(heap.pop().unwrap().0, 0);
        assert_eq!(heap.peek().unwrap().0, 2);
        assert_eq!(drain(&mut heap), vec![2, 4, 1, 3]);
    }

    #[test]
    fn nan_is_a_tie() {
        let mut heap = PairingHeap::new(HeapOrder::Nearest);
        heap.push(0, f64::NAN);
        heap.push(1, 0.0);
        assert_eq!(heap.peek().unwrap().0, 0);
    }

    #[test]
    fn upcoming_starts_with_root() {
        let mut heap = PairingHeap::new(HeapOrder::Nearest);
        for (i, k) in [3.0, 1.0, 2.0].iter().enumerate() {
            heap.push(i as u32, *k);
        }
        let up: Vec<u32> = heap.upcoming(8).collect();
        assert_eq!(up[0], 1);
        assert_eq!(up.len(), 3);
        assert_eq!(heap.upcoming(1).count(), 1);
    }
}
