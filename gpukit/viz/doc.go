// Package viz draws the course's charts with gonum/plot and shows them, and
// HTML such as the memory viewer, inline in a GoNB notebook.
//
// Outside a notebook the Show functions do nothing, so lesson code also runs
// as a plain Go program; use PNG or SVG to write a chart to a file instead.
//
// The offline memory viewer (segments and the active-memory timeline) lives
// in the subpackage memviewer.
package viz
