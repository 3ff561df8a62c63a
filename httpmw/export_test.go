package httpmw

// RaceEnabled tells the external tests that bytes.Buffer's growth
// allocates twice (TestMiddlewareLargeResponse).
const RaceEnabled = raceEnabled
