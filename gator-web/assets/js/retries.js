// Retries: the retry set (see sets.js).
"use strict";
GatorSets.show("retry", { title: "Retries", retry: "Retry now", selected: "Retry selected", all: "Retry all", when: "Next retry" });
