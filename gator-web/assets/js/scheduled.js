// Scheduled: the scheduled set (see sets.js).
"use strict";
GatorSets.show("scheduled", { title: "Scheduled", retry: "Run now", selected: "Run selected now", all: "Run all now", when: "Due" });
