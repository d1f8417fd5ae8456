// `State<T>` is cloned for each run, so `T` must be `Clone`: the error points at the type.
use gator_core::{State, job};

struct Pool; // not Clone

#[job]
async fn report(State(pool): State<Pool>, id: u64) {
    let _ = (pool, id);
}

fn main() {}
