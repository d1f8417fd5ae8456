// Scheduled: the scheduled set (see sets.js).
"use strict";
GatorSets.show("scheduled", { title: "Scheduled", retry: "Run now", when: "Due" });
