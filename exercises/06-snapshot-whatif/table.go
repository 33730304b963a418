package snapwhatif

// This file is given: do not edit it. It defines what Choose returns.

// Row is one line of the what-if table: what a snapshot's requests do
// under one allocator setting on the card.
type Row struct {
	Setting       string // the option, as given
	Fits          bool   // every request was served: the replay ran out of memory nowhere
	PeakAllocated int64  // bytes: allocated_bytes.all.peak of the replay
	PeakReserved  int64  // bytes: reserved_bytes.all.peak of the replay
	Retries       int64  // num_alloc_retries: how often the allocator freed its cache and tried again
}

// Choice is the table and the setting chosen from it.
type Choice struct {
	Rows []Row // one per option, in the order given
	// Best is the index in Rows of the chosen setting, -1 when no
	// setting fits.
	Best int
	// Headroom is what stays free on the card with the chosen setting:
	// the card's memory less its CUDA context, less the setting's peak
	// reserved memory. 0 when no setting fits.
	Headroom int64
}
