// Dead: the dead set (see sets.js).
"use strict";
GatorSets.show("dead", { title: "Dead", retry: "Retry", selected: "Retry selected", all: "Retry all", when: "Died" });
