package schemas

// FieldTruncated names the Field that marks a cut: the collector bounds the
// size of the Inputs of a workload (so that every event, and the BOM rendered
// from it, fits a stream message), and what it cuts it marks with a Field of
// this name, never silently. The Field is at the workload level (in
// Inputs.Fields) or in the Component the cut is in. Its Locator names what
// was cut: a string ("spec.template.spec.containers[0].image"), a list
// ("spec.template.spec.containers[0].args"), or the component whose
// containers, fields or roles were dropped (empty for the workload's own
// lists). Its Value says how much was kept, and gives the sha256 of the whole
// as the collector read it, after redaction (of a string, its bytes; of a
// list, its canonical JSON), so that the same input always gives the same
// cut and an edit past the cut still changes the InputHash:
//
//	kept 8192 of 5600000 bytes, whole sha256:<hex>
//	kept 256 of 70002 items (20480 of 5740161 bytes), whole sha256:<hex>
//	kept 12 of 300 containers (261000 of 6500000 bytes), whole sha256:<hex>
//
// (the bytes of a list are those of its canonical JSON).
// The transformer shows each mark as a bomstream:truncated property.
const FieldTruncated = "truncated"
