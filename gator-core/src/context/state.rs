//! Application state handed to jobs: values registered once on the worker by type, and taken
//! by a job as a `State<T>` parameter, the shape axum uses.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// A value of the application that a job takes as a parameter, `State(db): State<Db>`, given to
/// the worker at start with `.state(value)`. Like axum's: `T` is cloned for each run, so make it
/// cheap to clone (a pool, an `Arc`). It is not part of the job's wire arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct State<T>(pub T);

impl<T> std::ops::Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for State<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// The application's state values, one per type. Cheap to clone: clones share the values.
#[derive(Clone, Default)]
pub struct StateMap {
    values: Arc<HashMap<TypeId, Entry>>,
}

#[derive(Clone)]
struct Entry {
    value: Arc<dyn Any + Send + Sync>,
    type_name: &'static str,
}

impl StateMap {
    /// Registers `value` as the state of type `T`, replacing any earlier one of that type.
    pub fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.values).insert(
            TypeId::of::<T>(),
            Entry {
                value: Arc::new(value),
                type_name: std::any::type_name::<T>(),
            },
        );
    }

    /// A clone of the state of type `T`, if one was registered.
    pub fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|entry| entry.value.downcast_ref::<T>())
            .cloned()
    }

    /// Whether a state of the type `need` names was registered.
    pub fn provides(&self, need: &StateNeed) -> bool {
        self.values.contains_key(&(need.type_id)())
    }

    /// How many types have a state.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no state was registered.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The values may hold secrets (a pool's URL): show only their types.
        let mut names: Vec<_> = self.values.values().map(|e| e.type_name).collect();
        names.sort_unstable();
        f.debug_set().entries(names).finish()
    }
}

/// A state type a job takes (`State<T>`), recorded by `#[job]` so the worker can refuse to
/// start, at `build()`, when it was not given one.
#[derive(Clone, Copy)]
pub struct StateNeed {
    type_id: fn() -> TypeId,
    type_name: fn() -> &'static str,
}

impl StateNeed {
    /// The need for a `State<T>`.
    pub const fn of<T: 'static>() -> StateNeed {
        StateNeed {
            type_id: TypeId::of::<T>,
            type_name: std::any::type_name::<T>,
        }
    }

    /// The type's name, as `std::any::type_name` gives it (`my_app::Db`).
    pub fn type_name(&self) -> &'static str {
        (self.type_name)()
    }
}

impl fmt::Debug for StateNeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "State<{}>", self.type_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Db(&'static str);

    #[test]
    fn several_types_are_kept_apart_and_cloned_out() {
        let mut states = StateMap::default();
        states.insert(Db("pool"));
        states.insert(42u32);
        assert_eq!(states.get::<Db>(), Some(Db("pool")));
        assert_eq!(states.get::<u32>(), Some(42));
        assert_eq!(states.get::<String>(), None);
        assert!(states.provides(&StateNeed::of::<Db>()));
        assert!(!states.provides(&StateNeed::of::<String>()));
        assert!(StateNeed::of::<Db>().type_name().ends_with("Db"));
    }
}
