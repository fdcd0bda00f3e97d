//! Checked device code, shared between clients only for identical bytes.
//!
//! The key is a hash the server computes over the image itself
//! ([`rcud_fatbin::content_hash`]); an image whose claimed hash differs is
//! refused, so no client can plant code under the name of another's. A
//! client may load an image by hash alone (without shipping it again) only if
//! its owner (its tenant, or its connection on a server without tenants) has
//! shipped those bytes before: the hash of someone else's program opens
//! nothing. The cache holds at most a byte budget of parsed images and drops
//! the least recently used first; loaded modules keep their image alive on
//! their own.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;

/// Default budget of a backend's cache.
pub(crate) const DEFAULT_CACHE_BYTES: u64 = 1 << 30;

/// Parsed code that knows roughly what it costs in memory.
pub(crate) trait Cached: Send + Sync {
    /// Bytes of memory the parsed image holds, roughly.
    fn cost(&self) -> u64;
}

struct Slot<T> {
    image: Arc<T>,
    owners: HashSet<String>,
    used: u64,
}

/// The cache of one backend.
pub(crate) struct ImageCache<T> {
    state: Mutex<State<T>>,
    budget: u64,
}

struct State<T> {
    slots: HashMap<[u8; 32], Slot<T>>,
    bytes: u64,
    clock: u64,
}

impl<T> std::fmt::Debug for ImageCache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("ImageCache")
            .field("images", &state.slots.len())
            .field("bytes", &state.bytes)
            .field("budget", &self.budget)
            .finish()
    }
}

impl<T: Cached> Default for ImageCache<T> {
    fn default() -> Self {
        Self::with_budget(DEFAULT_CACHE_BYTES)
    }
}

impl<T: Cached> ImageCache<T> {
    /// A cache of at most `budget` bytes of parsed images.
    pub(crate) fn with_budget(budget: u64) -> Self {
        Self {
            state: Mutex::new(State {
                slots: HashMap::new(),
                bytes: 0,
                clock: 0,
            }),
            budget,
        }
    }

    /// The image `owner` asks for: by `hash` alone (`image` `None`), which
    /// only finds what this owner shipped before, and a miss is
    /// `cudaErrorInvalidValue` without a message (the client's cue to ship
    /// the image); or shipped, checked against `hash`, and parsed by `parse`
    /// unless identical bytes are cached already.
    pub(crate) fn get_or_parse(
        &self,
        owner: &str,
        hash: [u8; 32],
        image: Option<Vec<u8>>,
        parse: impl FnOnce(&[u8]) -> Result<T, Failure>,
    ) -> Result<Arc<T>, Failure> {
        let Some(bytes) = image else {
            let mut state = self.state.lock();
            let now = state.tick();
            return match state.slots.get_mut(&hash) {
                Some(slot) if slot.owners.contains(owner) => {
                    slot.used = now;
                    Ok(slot.image.clone())
                }
                _ => Err(CudaError::INVALID_VALUE.into()),
            };
        };
        if rcud_fatbin::content_hash(&bytes) != hash {
            return Err(Failure::new(
                CudaError::INVALID_VALUE,
                "the fat binary does not match the hash it was sent with",
            ));
        }
        {
            let mut state = self.state.lock();
            let now = state.tick();
            if let Some(slot) = state.slots.get_mut(&hash) {
                slot.used = now;
                slot.owners.insert(owner.to_string());
                return Ok(slot.image.clone());
            }
        }
        // Parsed outside the lock: other clients' loads go on meanwhile.
        let image = Arc::new(parse(&bytes)?);
        let cost = image.cost();
        let mut state = self.state.lock();
        let now = state.tick();
        if let Some(slot) = state.slots.get_mut(&hash) {
            // Another client parsed the same bytes meanwhile.
            slot.owners.insert(owner.to_string());
            return Ok(slot.image.clone());
        }
        if cost <= self.budget {
            state.make_room(cost, self.budget);
            state.bytes += cost;
            state.slots.insert(
                hash,
                Slot {
                    image: image.clone(),
                    owners: HashSet::from([owner.to_string()]),
                    used: now,
                },
            );
        }
        Ok(image)
    }

    /// Bytes of parsed images the cache holds.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.state.lock().bytes
    }

    /// Number of images held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.state.lock().slots.len()
    }
}

impl<T: Cached> State<T> {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Drops the least recently used images until `more` bytes fit.
    fn make_room(&mut self, more: u64, budget: u64) {
        while self.bytes + more > budget {
            let Some(oldest) = self
                .slots
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| *k)
            else {
                return;
            };
            if let Some(slot) = self.slots.remove(&oldest) {
                self.bytes -= slot.image.cost();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Code(Vec<u8>);

    impl Cached for Code {
        fn cost(&self) -> u64 {
            self.0.len() as u64
        }
    }

    fn parse(bytes: &[u8]) -> Result<Code, Failure> {
        Ok(Code(bytes.to_vec()))
    }

    fn ship(cache: &ImageCache<Code>, owner: &str, bytes: &[u8]) -> Result<Arc<Code>, Failure> {
        cache.get_or_parse(
            owner,
            rcud_fatbin::content_hash(bytes),
            Some(bytes.to_vec()),
            parse,
        )
    }

    #[test]
    fn code_cannot_be_planted_under_another_images_hash() {
        let cache = ImageCache::default();
        let victim = b"victim's kernels".to_vec();
        let hash = rcud_fatbin::content_hash(&victim);
        let planted = cache.get_or_parse("mallory", hash, Some(b"evil".to_vec()), parse);
        assert_eq!(
            planted.err().map(|f| f.code),
            Some(CudaError::INVALID_VALUE)
        );
        assert_eq!(cache.len(), 0);
        let loaded = ship(&cache, "alice", &victim).unwrap();
        assert_eq!(loaded.0, victim);
    }

    #[test]
    fn a_hash_alone_finds_only_what_the_same_owner_shipped() {
        let cache = ImageCache::default();
        let code = b"alice's program".to_vec();
        let hash = rcud_fatbin::content_hash(&code);
        ship(&cache, "alice", &code).unwrap();
        assert!(cache.get_or_parse("alice", hash, None, parse).is_ok());
        let miss = cache.get_or_parse("bob", hash, None, parse).err().unwrap();
        assert_eq!(miss.code, CudaError::INVALID_VALUE);
        // Shipping identical bytes shares the parsed image, and from then on
        // bob may load it by hash too.
        let a = cache.get_or_parse("alice", hash, None, parse).unwrap();
        let b = ship(&cache, "bob", &code).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(cache.get_or_parse("bob", hash, None, parse).is_ok());
    }

    #[test]
    fn the_least_recently_used_images_are_evicted_past_the_budget() {
        let cache = ImageCache::with_budget(100);
        let images: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 40]).collect();
        for img in &images[..2] {
            ship(&cache, "a", img).unwrap();
        }
        // Touch the first, so the second is the oldest.
        let first = rcud_fatbin::content_hash(&images[0]);
        cache.get_or_parse("a", first, None, parse).unwrap();
        ship(&cache, "a", &images[2]).unwrap();
        assert_eq!(cache.len(), 2);
        assert!(cache.bytes() <= 100);
        assert!(cache.get_or_parse("a", first, None, parse).is_ok());
        let second = rcud_fatbin::content_hash(&images[1]);
        assert!(cache.get_or_parse("a", second, None, parse).is_err());
        // An image larger than the whole budget is used but not kept.
        let huge = vec![9u8; 500];
        ship(&cache, "a", &huge).unwrap();
        assert!(cache.bytes() <= 100);
    }
}
