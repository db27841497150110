// Package stream owns the record stream's protocol, both sides: the server
// keeps the latest decision records in a bounded buffer and serves them over
// HTTP in the List-Watch style of the kube-apiserver; the client requests
// lists and watches and decodes them.
//
// A list (GET /v1/records) returns the buffered records with their
// monotonically increasing sequence numbers, the last sequence and the
// stream's epoch; with since=N it returns only the records after N. A
// watch (GET /v1/records?watch=true&since=N&epoch=E) streams every record
// after N, in order, as newline-delimited JSON events. Each list item and
// ADDED event is a Record: the record's sequence and trace ID beside the
// record itself, which holds neither.
//
// The records' JSON has a format version (record.FormatVersion): a list
// carries it beside its epoch, an ADDED event beside its sequence. A
// reader refuses a list or event of a version it does not read, or of
// none, with an error that wraps a *record.FormatError naming the version
// it got and the versions it reads.
//
// A watch from a sequence the buffer has already dropped, or from another
// epoch (the scheduler restarted), is answered with 410 Gone so the client
// relists. Writers never wait for readers: a reader that falls behind loses
// its place and gets 410 Gone on its next watch. The client sends a bearer
// token read from a file (WithTokenFile) to a stream served over https.
package stream
