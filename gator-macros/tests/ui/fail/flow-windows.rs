use gator_core::job;

#[job(windows = "05:00-07:00")]
async fn not_a_list() {}

#[job(windows = [])]
async fn no_window() {}

#[job(windows = [5, "05:00-07:00", WINDOW])]
async fn not_strings() {}

#[job(windows = ["24:00-02:00", "05:60-07:00", "5:00-7:00", "+5:00-07:00", "05:00-07:00-09:00"])]
async fn bad_times() {}

#[job(windows = ["05:00-07:00"], windows = ["22:00-23:00"])]
async fn two_lists() {}

#[job(windows = ["05:00-07:00"], tz = "")]
async fn empty_tz() {}

#[job(windows = ["05:00-07:00"], tz = Europe::Berlin)]
async fn tz_not_a_string() {}

fn main() {}
