package manifest

import (
	"runtime"
	"sync"
)

// fileRead is what readFile found in one file.
type fileRead struct {
	objs  []Object
	skips []Skip
	err   error
}

// readFiles reads files on every core (parsing YAML is most of the cost of
// a large tree) and returns their results in the order of files.
func readFiles(files []string, lim Limits) []fileRead {
	out := make([]fileRead, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := range next {
				o, s, err := readFile(files[i], lim)
				out[i] = fileRead{o, s, err}
			}
		})
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
