import { saveRun } from "./saveImpl";

saveRun(true);
