// `State<T>` is shared by every processor, so `T` must be `Send + Sync`.
use gator_core::{State, job};
use std::rc::Rc;

#[job]
fn count(State(counter): State<Rc<u64>>) {
    let _ = counter;
}

fn main() {}
