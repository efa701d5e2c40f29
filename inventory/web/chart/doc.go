// Package chart draws the inventory's charts as inline SVG, on the
// server, for templates to embed: no script, no external asset, no fixed
// colour.
//
// Bars draws a horizontal bar chart, one row per labelled value: the label
// on the left (cut to 32 characters with an ellipsis), the bar, and the
// value after it. Bars past a limit are summed into one "other (N)" row.
// A bar with a link wraps its row in <a href>; only relative and
// http(s) links are kept, anything else (javascript:, data:) is dropped.
// Days draws counts per day as columns, in day order, with the days
// between the first and the last that have no count drawn as zero, and an
// axis with the first, middle and last date and the largest count. Days
// share a fixed width, so a year of them is a year of narrow columns; a
// span longer than MaxDays keeps its last MaxDays days.
//
// Every chart is one <svg role="img"> whose accessible name and
// description are its <title> and <desc>, referenced by aria-labelledby
// through ids derived from a hash of the chart's kind, title and
// description, so different charts on one page have different ids. The
// svg has a viewBox and width="100%": it scales to its container and sets
// no pixel width. Each bar and column carries its own <title> ("label:
// value", "2024-05-01: 3 changes"), which browsers show on hover.
//
// Colours come from the page: the svg fills with currentColor, and its
// parts carry classes the page's light and dark styles can address:
// "chart" and "chart-bars" or "chart-days" on the svg, "bar" on bars and
// columns, "label" on bar labels, "value" on the values after bars,
// "axis" on the axis lines and their numbers and dates, and "label empty"
// on the words of a chart with no data.
//
// role="img" makes a chart one image to assistive technology, read by its
// title and description; a page that links from bars should offer the
// same links as text (a table or a list) too.
//
// All text is escaped, and characters XML does not allow are dropped, so
// the output is well-formed XML whatever the labels hold. Output depends
// only on the arguments: the same input gives the same bytes.
package chart
