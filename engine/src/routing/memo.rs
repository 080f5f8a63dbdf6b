//! What a model derives from one configuration (its parsed routes, rules, Ingress paths), kept
//! for the length of one intent check: the check routes hundreds of probes through the same
//! two configurations, and parsing them again for every probe was most of its cost.
//!
//! Entries are keyed by the configuration's address, which is sound only while the
//! configuration lives and does not change: [`with_derived_memo`] is installed by
//! `intent::check_step` around one step, which borrows both configurations for its whole
//! length, and by the check of a whole case, which keeps every configuration its steps route
//! through (each boxed, at an address of its own) until the case is done, so that the
//! original's tables are made once per case. The memo is dropped when the outermost call
//! returns. Outside it nothing is kept.
//!
//! What a model makes of a piece of input alone (a Traefik rule's text, a route's probe
//! conditions) is kept beside, keyed by that input's value ([`derived_from_value`]): the
//! configurations of a case are distinct objects, yet mostly repeat the original's routes.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::rc::Rc;
use std::thread::LocalKey;

/// Keyed by an address and two type ids, hashed with rustc-hash's Fx (the default SipHash
/// cost more than the lookups it served: a probe looks up several derived values). Keys are
/// addresses, not input text, so no one can pick colliding keys.
type Derived = HashMap<(usize, TypeId, TypeId), Rc<dyn Any>, rustc_hash::FxBuildHasher>;

/// Values built from a piece of input (a rule's text, a route's conditions) rather than from
/// one configuration, by the type of the input and of the value: each holds a
/// `HashMap<K, Rc<T>>` keyed by the input itself, hashed with the default SipHash (these keys
/// are input, which could be chosen to collide under Fx).
type ByValue = HashMap<(TypeId, TypeId), Box<dyn Any>, rustc_hash::FxBuildHasher>;

thread_local! {
    static DERIVED: RefCell<Option<Derived>> = const { RefCell::new(None) };
    static BY_VALUE: RefCell<Option<ByValue>> = const { RefCell::new(None) };
}

/// Runs `f` with a memo of derived values ([`derived`], [`derived_from_value`]); nested calls
/// share the outer memo.
pub fn with_derived_memo<R>(f: impl FnOnce() -> R) -> R {
    scoped(&DERIVED, || scoped(&BY_VALUE, f))
}

/// Runs `f` with `slot` holding a fresh value for the length of the call, emptied when it ends
/// (a panic included); a nested call shares the outer value. How the intent check's memos live
/// only as long as the check that fills them.
pub(crate) fn scoped<T: Default + 'static, R>(
    slot: &'static LocalKey<RefCell<Option<T>>>,
    f: impl FnOnce() -> R,
) -> R {
    // A fresh value lent for the call and dropped after it is handed back.
    lent(slot, &mut T::default(), f)
}

/// Runs `f` with `value` lent to `slot` for the length of the call and handed back when it ends
/// (a panic included), so that its caller keeps what `f` added for later calls: how a memo
/// lives longer than one check while the engine keeps no state of its own. When `slot` already
/// holds a value, `f` shares it and `value` is left as it was.
pub(crate) fn lent<T: Default + 'static, R>(
    slot: &'static LocalKey<RefCell<Option<T>>>,
    value: &mut T,
    f: impl FnOnce() -> R,
) -> R {
    let installed = slot.with(|cell| {
        let mut current = cell.borrow_mut();
        if current.is_some() {
            return false;
        }
        *current = Some(std::mem::take(value));
        true
    });
    struct HandBack<'a, T: 'static> {
        slot: &'static LocalKey<RefCell<Option<T>>>,
        value: Option<&'a mut T>,
    }
    impl<T: 'static> Drop for HandBack<'_, T> {
        fn drop(&mut self) {
            if let Some(value) = self.value.take()
                && let Some(lent) = self.slot.with(|cell| cell.borrow_mut().take())
            {
                *value = lent;
            }
        }
    }
    let _guard = HandBack {
        slot,
        value: installed.then_some(value),
    };
    f()
}

/// `build()`'s value for `source` (a configuration or a part of it), built once per memo.
/// Without an active memo it is built every time.
pub fn derived<K: 'static + ?Sized, T: 'static>(source: &K, build: impl FnOnce() -> T) -> Rc<T> {
    let key = (
        source as *const K as *const () as usize,
        TypeId::of::<K>(),
        TypeId::of::<T>(),
    );
    let found = DERIVED.with(|cell| cell.borrow().as_ref().map(|memo| memo.get(&key).cloned()));
    match found {
        Some(Some(value)) => value
            .downcast::<T>()
            .unwrap_or_else(|_| unreachable!("keyed by the value's type")),
        Some(None) => {
            let value = Rc::new(build());
            DERIVED.with(|cell| {
                if let Some(memo) = cell.borrow_mut().as_mut() {
                    memo.insert(key, value.clone() as Rc<dyn Any>);
                }
            });
            value
        }
        None => Rc::new(build()),
    }
}

/// `build()`'s value for the input `key`, built once per memo for equal keys: the
/// configurations of a case mostly repeat the original's routes (a step changes weights and
/// adds a route or two), so what a model makes of a route's text or conditions is made once
/// for the case, not once per configuration. Without an active memo it is built every time.
/// Bounded as the memo is: its keys are parts of the configurations the case keeps.
pub fn derived_from_value<K, T>(key: K, build: impl FnOnce(&K) -> T) -> Rc<T>
where
    K: Hash + Eq + 'static,
    T: 'static,
{
    let types = (TypeId::of::<K>(), TypeId::of::<T>());
    let found = BY_VALUE.with(|cell| {
        cell.borrow().as_ref().map(|memo| {
            memo.get(&types)
                .and_then(|values| values.downcast_ref::<HashMap<K, Rc<T>>>())
                .and_then(|values| values.get(&key).cloned())
        })
    });
    match found {
        Some(Some(value)) => value,
        Some(None) => {
            let value = Rc::new(build(&key));
            BY_VALUE.with(|cell| {
                if let Some(memo) = cell.borrow_mut().as_mut() {
                    memo.entry(types)
                        .or_insert_with(|| Box::new(HashMap::<K, Rc<T>>::new()))
                        .downcast_mut::<HashMap<K, Rc<T>>>()
                        .unwrap_or_else(|| unreachable!("keyed by the values' types"))
                        .insert(key, value.clone());
                }
            });
            value
        }
        None => Rc::new(build(&key)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn built_once_inside_the_memo_and_every_time_outside() {
        let source = String::from("config");
        let builds = Cell::new(0);
        let build = || {
            builds.set(builds.get() + 1);
            source.len()
        };
        with_derived_memo(|| {
            assert_eq!(*derived(&source, build), 6);
            assert_eq!(*derived(&source, build), 6);
        });
        assert_eq!(builds.get(), 1);
        derived(&source, build);
        derived(&source, build);
        assert_eq!(builds.get(), 3);
    }

    #[test]
    fn built_once_per_equal_input_inside_the_memo() {
        let builds = Cell::new(0);
        let build = |text: &String| {
            builds.set(builds.get() + 1);
            text.len()
        };
        with_derived_memo(|| {
            assert_eq!(*derived_from_value("rule".to_owned(), build), 4);
            assert_eq!(*derived_from_value("rule".to_owned(), build), 4);
            assert_eq!(*derived_from_value("other".to_owned(), build), 5);
        });
        assert_eq!(builds.get(), 2);
        derived_from_value("rule".to_owned(), build);
        assert_eq!(builds.get(), 3);
    }

    thread_local! {
        static LENT: RefCell<Option<Vec<u32>>> = const { RefCell::new(None) };
    }

    fn push(n: u32) {
        LENT.with(|cell| cell.borrow_mut().as_mut().expect("installed").push(n));
    }

    #[test]
    fn a_lent_value_comes_back_with_what_was_added_and_a_nested_call_shares_it() {
        let mut kept = vec![1];
        lent(&LENT, &mut kept, || {
            push(2);
            let mut other = vec![9];
            lent(&LENT, &mut other, || push(3));
            assert_eq!(other, [9]);
            scoped(&LENT, || push(4));
        });
        assert_eq!(kept, [1, 2, 3, 4]);
        assert!(LENT.with(|cell| cell.borrow().is_none()));
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lent(&LENT, &mut kept, || {
                push(5);
                panic!("checked");
            })
        }));
        assert!(unwound.is_err());
        assert_eq!(kept, [1, 2, 3, 4, 5]);
        assert!(LENT.with(|cell| cell.borrow().is_none()));
    }
}
